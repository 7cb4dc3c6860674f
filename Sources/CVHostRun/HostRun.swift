import CPluginGuard
import CVHostCore
import CVHostOutput
import CVHostPlugins
import CVHostSources
import CVHostV4L2
import Dispatch
import Foundation

/// One run of `cvhost run`: outputs, plugins and inputs opened in that order (a bad one ends the
/// run before anything starts), the inputs run until they end or a stop is asked for, then the
/// final lines and the exit code (`RunConclusion`). The CLI parses; this runs.
public struct HostRun {
    public let settings: RunSettings
    /// Where stdout's JSON lines go; nil: stdout itself, claimed (StandardOutput.claim).
    private let resultsDescriptor: Int32?

    /// `resultsDescriptor`: a descriptor the caller owns, for the lines of an `--output -` (a test's
    /// file); nil, as `cvhost run` does: stdout, with descriptor 1 pointed at stderr.
    public init(_ settings: RunSettings, resultsDescriptor: Int32? = nil) {
        self.settings = settings
        self.resultsDescriptor = resultsDescriptor
    }

    /// Runs to the end. - Throws: RunFailure with the exit code (its message already said on stderr).
    public func run() throws {
        let s = settings
        // Last of all (the outputs' final lines are written with the signals still handled).
        let dispositions = SignalHandler.saveDispositions()
        defer { SignalHandler.restore(dispositions) }
        Log.level = s.verbose ? .debug : (s.quiet ? .warning : .info)
        VideoFileDevice.setLibraryLogging(verbose: s.verbose)
        // A closed stdout must end the run quietly, not kill it with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        // The JSON lines alone on stdout: what plugins write to it goes to stderr.
        let results = resultsDescriptor ?? StandardOutput.claim()
        let destinations = s.outputs
        // Plugins run in this process: if one crashes it, say which one, on which frame (on
        // stdout, when it is an output: a signal handler cannot reach the other outputs' queues).
        cvhost_guard_set_producer(String(decoding: JSONObject.producerFields, as: UTF8.self))
        cvhost_guard_install(ExitCodes.pluginCrashed, destinations.contains(.stdout) ? results : -1)
        defer { cvhost_guard_host_exiting() }
        if !destinations.contains(.stdout) && resultsDescriptor == nil { close(results) }

        let specs = s.inputs
        for spec in specs where spec.name == nil {
            if case .input(let text) = spec.kind, PasswordRedaction.hidesSomething(text) {
                Log.warning("input \(spec.sourceID()) is written with its password and query values as *** in every line "
                            + "(source, MQTT topics, metrics); --input NAME=URL gives it a name of your choosing instead")
            }
        }
        let firstCamera = specs.first?.kind == .firstCamera ? V4L2Discovery.captureNodes().first : nil
        let ids = specs.map { $0.sourceID(cameraPath: firstCamera?.path) }
        let sessions = specs.map { _ in CaptureSession() }
        let stop = RunStop(sessions: sessions)
        // Signals from here on. While the outputs open (a required broker awaited) and while the
        // inputs open (a FIFO with no writer, a server that does not answer), nothing has run yet:
        // a stop then ends cvhost at once (exit 0). While plugins are created, a stop reaches the
        // inputs as they start (RunStop), and a create() that holds it is named (CreationWatch).
        let phase = Locked(StartupPhase.outputs)
        let signals = SignalHandler {
            stop.request(.signal)
            if let waiting = phase.withLock({ $0.stoppableAtOnce }) {
                Log.info("stopped while \(waiting): nothing had run yet")
                cvhost_guard_host_exiting()
                exit(ExitCodes.success)
            }
        }
        defer { signals.cancel() }
        // Outputs first (a file that cannot be opened ends the run before anything starts). A
        // stdout reader that went away ends the run quietly; lost lines end it with exit 4 (below).
        let liveView = s.liveView.map { RunLiveView(options: $0) }
        let output = try RunOutput.open(destinations, stdoutDescriptor: results, connectTimeout: s.openTimeout,
                                        taps: liveView.map { [$0.events] } ?? [], stdoutSelection: s.stdoutSelection, onStdoutClosed: { stop.request(.outputClosed) })
        // Whatever ends the run, the outputs deliver what was written (at the normal end: RunOutput.finish).
        defer { _ = output.finish() }
        let lines = RunLines(output: output, sources: specs.count)
        // Stopping, a reader of stdout that has stopped reading has 5 s more; then its lines are
        // dropped (counted; exit 4) and the run ends.
        stop.whenRequested { [stdout = output.stdout] in stdout?.giveUp(atNs: HostClock.monotonicNs() + Self.stalledReaderGraceNs) }

        phase.withLock { $0 = .plugins }

        // Plugins first: a bad --plugin is reported before any input is opened. Each input gets
        // its own runner of every plugin (own instances, queues and metrics). With --oneshot their
        // lines go through the gate that stops the run at the first result.
        let pluginSink: OutputSink = s.oneshot ? OneShotGate(output: output, stop: stop) : output
        var runners: [[PluginRunner]] = []
        defer { HungPluginStop.shutDown(Array(runners.joined()), output: output) }
        // Only while plugins are created: from then on, HungPluginStop names a hang.
        let creation = HungPluginStop.CreationWatch(stop: stop)
        defer { creation.finish() }
        // The spec being read or created, for an error about it (and where a config file gives it).
        var current = ""
        do {
            let loader = PluginLoader(stopRequested: { stop.requested != nil })
            let requests = try s.plugins.map { spec in
                current = spec
                let request = try PluginRequest(parsing: spec)
                return (request, try loader.find(request.nameOrPath, isPath: request.isPath))
            }
            for id in ids {
                var forInput: [PluginRunner] = []
                defer { runners.append(forInput) }
                for (index, (request, plugin)) in requests.enumerated() {
                    current = s.plugins[index]
                    creation.creating(plugin.name)
                    forInput.append(try PluginRunner(plugin: plugin, source: id, logPrefix: specs.count > 1 ? id : nil, index: index,
                                                     options: request.options, queueDepth: s.queueDepth, backpressure: s.backpressure,
                                                     isolation: s.isolation,
                                                     sink: pluginSink))
                }
            }
        } catch let error as PluginLoadError {
            if stop.requested != nil && runners.joined().isEmpty {
                // Stopped while a plugin was being read (a Python import): nothing has run yet.
                Log.info("\(error.message): nothing had run yet")
                return
            }
            throw fail((s.pluginOrigins[current].map { "\($0): " } ?? "") + error.message, code: error.kind.exitCode)
        }
        creation.finish()
        // A Python plugin's file that changes is reloaded while the run goes on.
        let watch = PluginFileWatch(runners: Array(runners.joined()))
        defer { watch?.cancel() }

        // Then every input: one that cannot be opened ends the run before any starts (exit 3).
        phase.withLock { $0 = .inputs }
        var sources: [SourceRun] = []
        for (i, spec) in specs.enumerated() {
            let id = ids[i]
            do {
                let (device, settings) = try open(spec, firstCamera: firstCamera, onSkip: { path, reason in
                    Log.warning("skipped \(path): \(reason)")
                    lines.write(SessionEventLines.inputSkipped(source: id, path: path, reason: reason))
                })
                sources.append(try SourceRun(id: id, device: device, session: sessions[i], runners: runners[i], lines: lines,
                                             deviceSettings: settings, frameLimit: s.maxFrames, tagLogs: specs.count > 1))
            } catch let error as CaptureError {
                throw fail(spec.name.map { "\($0): " + error.message } ?? error.message, code: ExitCodes.inputUnavailable)
            } catch {
                throw fail("\(error)", code: ExitCodes.internalError)
            }
        }

        phase.withLock { $0 = .running }
        // Changes while running: over HTTP (with --http) and as JSON lines on stdin.
        let commands = LiveCommands(sources: sources, lines: lines, stop: stop)
        try liveView?.start(sources: sources, output: output, commands: commands)
        lines.liveViewURL.withLock { $0 = liveView?.url }
        defer { liveView?.stop() }
        if s.stdinCommands && !specs.contains(where: \.readsStandardInput) { StdinCommands.start(commands, lines: lines) }

        // With a camera, cameras plugged in or out while running are reported (not for files).
        let monitor = sources.contains { $0.device is V4L2CaptureDevice } ? startDeviceMonitor(lines) : nil
        defer { monitor?.cancel() }
        for (i, source) in sources.enumerated() {
            do {
                try source.session.startRunning()
                stop.started(source.session)
            } catch let error as CaptureError {
                // The inputs already running end cleanly (their final lines) before the exit.
                stop.request(.requested)
                sources[..<i].forEach { $0.session.waitUntilStopped() }
                throw fail(specs[i].name.map { "\($0): " + error.message } ?? error.message, code: ExitCodes.inputUnavailable)
            }
            Log.debug("running \(source.device.localizedName) with \(source.runners.map(\.output.label).joined(separator: ", "))")
        }

        paceUntilStopped(sources, stop: stop, jsonDescriptor: destinations.contains(.stdout) ? results : nil)
        commands.inputsEnded()
        let endedByThemselves = stop.requested == nil
        sources.forEach { $0.warnOfDamage() }
        let outcome = Result { try conclude(sources, output: output, stoppedBy: stop.requested?.why) }
        // With --http, a run whose inputs ended (a file) stays up to be looked at, until stopped.
        if endedByThemselves { liveView?.linger(stop: stop) }
        try outcome.get()
    }

    /// The outputs deliver what waits (exit 4 when an output lost lines); then the exit code of
    /// what became of the inputs and plugins (`RunConclusion`). `stoppedBy`: the stop asked for,
    /// nil when the inputs ended by themselves.
    private func conclude(_ sources: [SourceRun], output: OutputRouter, stoppedBy: StopReason?) throws {
        try RunOutput.finish(output)
        let runners = sources.flatMap(\.runners)
        var conclusion = RunConclusion()
        conclusion.inputFailed = sources.contains(where: \.report.failed)
        conclusion.unreadImages = sources.first(where: { $0.device is StillImageDevice && $0.session.capturedFrameCount == 0 })?.id
        conclusion.quarantinedPlugin = runners.first(where: \.isQuarantined)?.plugin.name
        conclusion.pluginFailingEveryFrame = runners.first(where: \.failedEveryFrame).map { ($0.plugin.name, $0.source) }
        conclusion.anyResult = runners.contains { $0.resultCount > 0 }
        if conclusion.anyResult, case .field(let name) = settings.stdoutSelection, let others = output.missingFieldAlternatives {
            // A mistyped field (--field txt) would else print nothing and exit 0.
            Log.warning("no result had a field '\(name)' (--field), so stdout got nothing"
                        + (others.isEmpty ? "" : ": the results' fields are \(others.joined(separator: ", "))"))
            conclusion.anyResult = false
        }
        conclusion.stoppedBy = stoppedBy
        guard let (code, message) = conclusion.failure else { return }
        if code == ExitCodes.nothingFound {
            Log.info("nothing found: no plugin wrote a result (exit code \(ExitCodes.nothingFound))")
        } else if !message.isEmpty {
            Log.error(message)
        }
        throw RunFailure(code)
    }

    /// How long a stopping run waits for a stdout reader that has stopped reading.
    static let stalledReaderGraceNs: UInt64 = 5_000_000_000

    /// On the main thread, until every input has stopped: periodic metrics, progress (one input
    /// with a known length), and the --duration limit on a timer of its own (not this thread: it
    /// may be held by a write to a stdout nobody reads).
    private func paceUntilStopped(_ sources: [SourceRun], stop: RunStop, jsonDescriptor: Int32?) {
        let startNs = HostClock.monotonicNs()
        let durationTimer = settings.duration.map { seconds in
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(deadline: .now() + seconds)
            timer.setEventHandler { stop.request(.duration) }
            timer.resume()
            return timer
        }
        defer { durationTimer?.cancel() }
        let interval = settings.metricsInterval > 0 ? UInt64(settings.metricsInterval * 1e9) : nil
        var nextMetrics = interval.map { startNs + $0 }
        let progress = sources.count == 1 ? Progress(device: sources[0].device, enabled: !settings.quiet, jsonDescriptor: jsonDescriptor) : nil
        var nextProgress = progress.map { _ in startNs + 1_000_000_000 }
        // Waiting on the first input still running is enough: the loop ends when none is left.
        while let running = sources.first(where: { !$0.isStopped }) {
            // A look every half second at least: a stop under way may be held up by a plugin that hangs.
            let stopping = HungPluginStop.stoppingSince(sources, stop: stop)
            let hangCheck = HostClock.monotonicNs() + 500_000_000
            let wakeAt = [nextMetrics, nextProgress, hangCheck].compactMap { $0 }.min()!
            let waitSeconds = Double(wakeAt > HostClock.monotonicNs() ? wakeAt - HostClock.monotonicNs() : 0) / 1e9
            if running.session.waitUntilStopped(timeout: waitSeconds) { continue }
            let now = HostClock.monotonicNs()
            if let stopping {
                let hung = HungPluginStop.hung(sources, stoppingSince: stopping, now: now)
                if !hung.isEmpty { HungPluginStop.abandon(sources, stop: stop, hung: hung, now: now) }
            }
            if let n = nextMetrics, now >= n {
                sources.forEach { $0.report.writePeriodicMetrics() }
                nextMetrics = n + interval!
            }
            if let n = nextProgress, now >= n {
                progress?.show(frames: sources[0].session.capturedFrameCount, elapsedNs: now - startNs)
                nextProgress = n + 1_000_000_000
            }
        }
        progress?.finish(frames: sources[0].session.capturedFrameCount)
    }
}

/// Where a run is in its start, for what a signal does then.
enum StartupPhase {
    case outputs, plugins, inputs, running

    /// What the run waits for when a stop may end it at once (nothing has run yet); nil otherwise.
    var stoppableAtOnce: String? {
        switch self {
        case .outputs: "opening the outputs"
        case .inputs: "opening the inputs"
        case .plugins, .running: nil
        }
    }
}
