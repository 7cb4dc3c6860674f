import CVHostCore
import CVHostEvidence
import CVHostOutput
import CVHostPlugins
import CVHostSources
import CVHostV4L2
import Dispatch
import Foundation

/// The run's last stage: the inputs' sessions running, with what a running run offers (commands
/// on stdin and over HTTP, inputs added and removed, the live view, cameras plugged in or out),
/// paced on the run's thread (periodic metrics, progress, --duration, a stop held by a hung
/// plugin) until every input has stopped and none is being added; then the outputs deliver what
/// waits and the exit code is found (`RunConclusion`).
/// Closing it ends what it offered: the device monitor and the live view.
final class RunningSession: Sendable {
    private let settings: RunSettings
    private let inputs: RunInputs
    private let outputs: OutputStage
    private let stop: RunStop
    private let monitor: V4L2DeviceMonitor?
    /// Commands while running (stdin's, HTTP's, and HostRun's `handle`).
    let commands: LiveCommands
    /// Reloads, one at a time, off the thread that asked (a signal's).
    private let reloads = DispatchQueue(label: "cvhost.reload")

    /// How the running ended.
    enum Ending {
        /// The inputs stopped: the conclusion (nil: exit 0) or an error of the outputs' delivery.
        case concluded(Result<Void, Error>)
        /// A plugin's call held the stop: the final lines are written, the run ends without it.
        case abandoned
    }

    /// Starts the live view and the commands, then every input's session.
    /// - Throws: exit 6 (the live view cannot listen), exit 3 (an input that fails to start; the
    ///   ones already running end cleanly first).
    init(_ s: RunSettings, inputs: RunInputs, changes: InputChanges, rules: AnalyticsRules, counts: TotalsKeeper, outputs: OutputStage,
         stop: RunStop) throws {
        settings = s
        self.inputs = inputs
        self.outputs = outputs
        self.stop = stop
        let sources = inputs.all
        // A stop: nothing more is added (an add under way finds it and stops its input at once).
        stop.whenRequested { inputs.close() }
        // Changes while running: over HTTP (with --http) and as JSON lines on stdin.
        let commands = LiveCommands(inputs: inputs, changes: changes, rules: rules, counts: counts, lines: outputs.lines, stop: stop)
        self.commands = commands
        try outputs.liveView?.start(inputs: inputs, output: outputs.output, commands: commands, evidence: outputs.evidence,
                                    eventStore: outputs.events?.store)
        // The address lines give (other machines open it with --http-public-url).
        let url = outputs.liveView.flatMap { _ in s.liveView?.publicURL } ?? outputs.liveView?.url
        outputs.lines.liveViewURL.withLock { $0 = url }
        outputs.evidence?.serve(at: url)
        outputs.liveView?.linesAddress(url)
        if s.stdinCommands && !s.inputs.contains(where: \.readsStandardInput) { StdinCommands.start(commands, lines: outputs.lines) }
        // With a camera, cameras plugged in or out while running are reported (not for files).
        monitor = sources.contains { $0.device is V4L2CaptureDevice || $0.device is V4L2AwaitedCamera } ? Self.startDeviceMonitor(outputs.lines) : nil
        for (i, source) in sources.enumerated() {
            do {
                try source.session.startRunning()
                stop.started(source.session)
            } catch let error as CaptureError {
                // The inputs already running end cleanly (their final lines) before the exit.
                stop.request(.requested)
                sources[..<i].forEach { $0.session.waitUntilStopped() }
                close()
                throw fail(s.inputs[i].name.map { "\($0): " + error.message } ?? error.message, code: ExitCodes.inputUnavailable)
            }
            Log.debug("running \(source.device.localizedName) with \(source.runners.map(\.output.label).joined(separator: ", "))")
        }
    }

    /// Applies a config file read anew (RunReload), on a queue of its own: returns at once.
    func reload(_ new: RunSettings) {
        reloads.async { [settings, commands] in RunReload.apply(new, started: settings, commands: commands) }
    }

    /// Until every input has stopped; then the final delivery and the conclusion. With --http, a
    /// run whose inputs ended by themselves (a file) stays up to be looked at, until stopped.
    /// - Parameter inputsStopped: called once every input has stopped, before the outputs deliver what waits.
    func runUntilStopped(jsonDescriptor: Int32?, inputsStopped: () -> Void) -> Ending {
        guard paceUntilStopped(jsonDescriptor: jsonDescriptor) else { return .abandoned }
        // The run that waited for inputs no longer does: lines of no input stop with its inputs' (RunLines).
        if settings.waitsForInputs { outputs.lines.writeFinal(count: 0) { [] } }
        inputsStopped()
        let endedByThemselves = stop.requested == nil
        let sources = inputs.all
        sources.forEach { $0.warnOfDamage() }
        let outcome = Result { try conclude(stoppedBy: stop.requested?.why) }
        if endedByThemselves { outputs.liveView?.linger(stop: stop) }
        return .concluded(outcome)
    }

    /// Ends what the running offered: camera reports, then the live view.
    func close() {
        monitor?.cancel()
        outputs.liveView?.stop()
    }

    /// The outputs deliver what waits (exit 4 when an output lost lines); then the exit code of
    /// what became of the inputs and plugins (`RunConclusion`). `stoppedBy`: the stop asked for,
    /// nil when the inputs ended by themselves.
    private func conclude(stoppedBy: StopReason?) throws {
        outputs.evidence?.finish()
        try RunOutput.finish(outputs.output)
        let sources = inputs.all
        let runners = sources.flatMap(\.runners)
        var conclusion = RunConclusion()
        conclusion.inputFailed = sources.contains(where: \.report.failed)
        conclusion.unreadImages = sources.first(where: { $0.device is StillImageDevice && $0.session.capturedFrameCount == 0 })?.id
        conclusion.quarantinedPlugin = runners.first(where: \.isQuarantined)?.plugin.name
        conclusion.pluginFailingEveryFrame = runners.first(where: \.failedEveryFrame).map { ($0.plugin.name, $0.source) }
        conclusion.anyResult = runners.contains { $0.resultCount > 0 }
        if conclusion.anyResult, case .field(let name) = settings.stdoutSelection, let others = outputs.output.missingFieldAlternatives {
            // A mistyped field (--field txt) would else print nothing and exit 0.
            Log.warning("no result had a field '\(name)' (--field), so stdout got nothing"
                        + (others.isEmpty ? "" : ": the results' fields are \(others.joined(separator: ", "))"))
            conclusion.anyResult = false
        }
        conclusion.stoppedBy = stoppedBy
        guard let (code, message) = conclusion.failure else { return }
        if code == ExitCodes.nothingFound {
            Log.info("nothing found: no plugin wrote a result (exit code \(ExitCodes.nothingFound))")
        }
        throw RunFailure(code, message: code == ExitCodes.nothingFound || message.isEmpty ? nil : message)
    }

    /// On the run's thread, until every input has stopped: periodic metrics, progress (one input
    /// with a known length), and the --duration limit on a timer of its own (not this thread: it
    /// may be held by a write to a stdout nobody reads).
    /// - Returns: false when a hung plugin made the run end without it (its final lines written).
    private func paceUntilStopped(jsonDescriptor: Int32?) -> Bool {
        let startNs = HostClock.monotonicNs()
        let stop = self.stop
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
        let first = inputs.all.first
        let progress = inputs.all.count == 1 ? Progress(device: first!.device, enabled: !settings.quiet, jsonDescriptor: jsonDescriptor) : nil
        var nextProgress = progress.map { _ in startNs + 1_000_000_000 }
        // Waiting on the first input still running is enough: the loop ends when none is left and
        // none is being added (which may stand in for one being changed).
        while true {
            let sources = inputs.all
            guard let running = sources.first(where: { !$0.isStopped }) else {
                // A fleet's node (waitsForInputs) goes on with no input, until a stop, for the inputs the site gives it.
                if settings.waitsForInputs && stop.requested == nil {
                    inputs.waitForChange(untilMonotonicNs: HostClock.monotonicNs() + 500_000_000)
                    continue
                }
                if inputs.closeWhenIdle() { break }
                inputs.waitWhileOpening(untilMonotonicNs: HostClock.monotonicNs() + 500_000_000)
                continue
            }
            // A look every half second at least: a stop under way may be held up by a plugin that hangs.
            let stopping = HungPluginStop.stoppingSince(sources, stop: stop)
            let hangCheck = HostClock.monotonicNs() + 500_000_000
            let wakeAt = [nextMetrics, nextProgress, hangCheck].compactMap { $0 }.min()!
            let waitSeconds = Double(wakeAt > HostClock.monotonicNs() ? wakeAt - HostClock.monotonicNs() : 0) / 1e9
            if running.session.waitUntilStopped(timeout: waitSeconds) { continue }
            let now = HostClock.monotonicNs()
            if let stopping {
                let hung = HungPluginStop.hung(sources, stoppingSince: stopping, now: now)
                if !hung.isEmpty {
                    HungPluginStop.abandon(sources, stop: stop, hung: hung, now: now)
                    return false
                }
            }
            if let n = nextMetrics, now >= n {
                sources.forEach { $0.report.writePeriodicMetrics() }
                nextMetrics = n + interval!
            }
            if let n = nextProgress, now >= n {
                progress?.show(frames: first!.session.capturedFrameCount, elapsedNs: now - startNs)
                nextProgress = n + 1_000_000_000
            }
        }
        if let first { progress?.finish(frames: first.session.capturedFrameCount) }
        return true
    }

    /// Reports cameras plugged in or out while running (lines of no input), as long as an input runs.
    static func startDeviceMonitor(_ lines: RunLines) -> V4L2DeviceMonitor? {
        do {
            return try V4L2DeviceMonitor { change in
                switch change {
                case .connected(let node): Log.info("camera connected: \(node.path) (\(node.card))")
                case .disconnected(let node): Log.info("camera disconnected: \(node.path) (\(node.card))")
                }
                lines.writeWhileRunning(SessionEventLines.deviceChange(change))
            }
        } catch let error as CaptureError {
            Log.warning("\(error.message); cameras plugged in or out will not be reported")
            return nil
        } catch {
            return nil
        }
    }
}
