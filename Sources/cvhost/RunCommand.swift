import ArgumentParser
import CPluginGuard
import CVHostCore
import CVHostOutput
import CVHostPlugins
import CVHostSources
import CVHostV4L2
import Dispatch
import Foundation

extension BackpressurePolicy: ExpressibleByArgument {}
extension PluginIsolation: ExpressibleByArgument {}

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run plugins on an input and write their results as JSON Lines (stdout, files, an MQTT broker).",
        discussion: """
            EXAMPLES
              cvhost run --plugin barcode                    # the first camera
              cvhost run --plugin barcode --input clip.mp4
              cvhost run --plugin barcode --oneshot --input photo.jpg
              cvhost run --plugin barcode --input 'shots/*.png' > codes.jsonl
              cvhost run --plugin barcode:symbologies=qrcode+ean13 \\
                         --device /dev/video2 --format 1280x720@30
              cvhost run --plugin face --reconnect \\
                         --input gate=rtsp://user:pass@10.0.0.5/stream1
              cvhost run --config /etc/cvhost/gate.yaml --http 8080

            INPUTS (--input; without it, the camera of --device or the first camera)
              clip.mp4, clip.mkv, ...   a video file (FFmpeg); nothing is dropped
              photo.jpg                 an image (PNG, JPEG, WebP, PPM, BMP, TIFF)
              shots/                    every image in a folder, in name order
              'shots/*.png'             images matching a glob (quote it)
              testsrc[:WxH][@FPS]       a synthetic live camera (640x480@30)
              testsrc:...:unpaced       the same, as fast as plugins take frames
              rtsp://[user:pass@]host[:port]/path, rtsps://...
                                        an IP camera (RTP over TCP; UDP when the server refuses TCP)
              http(s)://...             an MJPEG stream, an HLS playlist (.m3u8), a progressive MP4
              rtmp://, srt://, udp://   other live streams
              -                         a stream on standard input (e.g. from ffmpeg ... -f mpegts -)
              a named pipe              the same, from a FIFO
            Several --input and --device flags run several inputs at once, each with its own capture thread, plugin instances, queues and metrics. NAME= in front names an input (--input gate=rtsp://..., --device desk=/dev/video0): every line's "source" is that name, or else the input as written (a URL without its password) or the camera's path. Every input must open for the run to start (else exit 3, naming it); an input that fails later is reported (session.error with its source) and the others go on; the run's exit code is then 2. --max-frames counts per input; --format, --pixel-format and --control apply to every camera.

            Network streams are live: late frames are dropped by default, frames are stamped on arrival, media time is the stream's. Standard input and pipes are read like files (nothing dropped), in a format that needs no seeking (MPEG-TS, Matroska). A password in a URL is used, never printed (user:***@). An open that fails (refused, not found, wrong credentials, no answer within --open-timeout) is exit 3; no data for 2 s is session.interrupted; a lost connection is session.error and exit 2, or with --reconnect a new connection with backoff and session.interruption_ended when frames flow.

            PLUGINS (--plugin NAME[:key=value,...], repeatable)
              barcode   1D and 2D codes: QR, DataMatrix, EAN, Code 128... (zxing-cpp)
              face      faces with OpenCV: an id across frames, bounds, angles
              motion    share of pixels that changed, motion start and stop
              null      does nothing, at a chosen cost (tests, benchmarks)
            NAME is looked up as libcvhost-NAME.so in $CVHOST_PLUGIN_PATH, beside this executable, and in <prefix>/lib/cvhost/plugins; a path (./libfoo.so) loads that file. `cvhost plugins` lists them with their options. A comma inside a value is written \\,. Every plugin also takes these host options:
              instances=N|auto  N instances on N threads (auto: one per core)
              queue_depth=N     frames that may wait (default --queue-depth)
              backpressure=P    drop-late or block (default --backpressure)
              max_fps=F         at most F frames per second of media time
              mirror=true       flip frames left to right for this plugin
              rotate=90|180|270 turn frames clockwise for this plugin (after mirror)
              isolation=I       none or process (default --isolation)
              timeout_ms=N      process: a call longer than N ms is a hang (5000)
              max_rss_mb=N      process: restart the worker above N MiB resident

            ISOLATION
            none (the default): a plugin runs in cvhost's process; a crash or exit() in it ends the run (exit 19). process: each --plugin runs in a worker process of its own (this executable, run again), frames shared through memory, results checked by cvhost as always. A crash, exit(), a call hung past timeout_ms or memory past max_rss_mb gives plugin.crashed; the frames meanwhile are dropped (reason restarting), the worker is started again after a backoff (0.1 s, doubling) and plugin.restarted follows; 5 crashes within 60 s quarantine it (plugin.quarantined): the run goes on without it and ends with exit 21.

            BACK-PRESSURE
            drop-late (live sources' default): at most --queue-depth frames wait for each plugin; when a newer frame arrives, the oldest waiting one is dropped and counted. A slow plugin never slows the source or another plugin. block (the default for files and images): the source waits; nothing is lost.

            OUTPUT
            The output is JSON Lines only: session.started, result, metrics, session.error, session.stopped and more (with a camera, device.connected and device.disconnected when cameras are plugged in or out; output.connected and output.disconnected for a broker). Every line names its producer ("host", "session") and its input ("source"). The final metrics of every plugin and then session.stopped are always an input's last lines. Messages for people go to stderr.

            \(RunOutput.helpText)

            \(HTTPOptions.helpText)

            \(RunConfigFile.helpText)

            \(ExitCodes.helpText)
            """)

    @Option(name: .customLong("plugin"), help: ArgumentHelp("A plugin to run, with options: NAME[:key=value,...]. Repeatable.",
                                                            valueName: "spec"))
    var plugins: [String] = []

    @Option(name: .customLong("input"),
            help: ArgumentHelp("What to read: a video file, an image, a folder, a quoted glob, a stream URL (rtsp://, http://...), - for stdin, or testsrc[:WxH][@FPS]. Repeatable; NAME= in front names it.",
                               valueName: "[name=]source"))
    var inputs: [String] = []

    @Option(name: .customLong("device"),
            help: ArgumentHelp("A V4L2 camera, e.g. /dev/video0 (default, with no --input: the first camera). Repeatable; NAME= in front names it.",
                               valueName: "[name=]path"))
    var devices: [String] = []

    @Option(help: ArgumentHelp("Camera format: WxH[@FPS], high, medium, low or input-priority (default: medium, the size nearest 1280x720).",
                               valueName: "format"))
    var format: String?

    @Option(name: .customLong("pixel-format"), help: ArgumentHelp("Camera pixel format: a four-character code (YUYV, MJPG) or nv12, i420, gray8...",
                                                                  valueName: "code"))
    var pixelFormat: String?

    @Option(name: .customLong("control"), help: ArgumentHelp("Set a camera control: NAME=VALUE (a number, on/off, or a menu item). Repeatable; `cvhost devices` lists them.",
                                                              valueName: "name=value"))
    var controls: [String] = []

    @Flag(help: "If the camera is unplugged or a stream's connection is lost, wait for it to come back and go on (default: end with an error, exit 2).")
    var reconnect = false

    @Option(name: .customLong("rtsp-transport"), help: ArgumentHelp("RTP over tcp or udp for rtsp:// inputs (default: tcp, and udp when the server refuses tcp).",
                                                                    valueName: "tcp|udp"))
    var rtspTransport: String?

    @Option(name: .customLong("open-timeout"), help: ArgumentHelp("Seconds a stream URL may take to open.", valueName: "seconds"))
    var openTimeout: Double = 10

    @Option(name: .customLong("output"),
            help: ArgumentHelp("Where the JSON lines go: - (stdout, the default), file:PATH, mqtt://[user[:password]@]host[:port][/prefix] or mqtts://... Repeatable; see OUTPUTS.",
                               valueName: "destination"))
    var outputs: [String] = []

    @OptionGroup(title: "Live view and control")
    var http: HTTPOptions

    @Flag(help: "Stop at the first frame with a result: write that frame's results and the final lines (as zbarcam -1). Exit 22 when the input ends with none.")
    var oneshot = false

    @Flag(inversion: .prefixedNo, help: "Read JSON commands from stdin while running (set_control, set_plugin, get_controls, stop); off when an input is stdin.")
    var stdinCommands = true

    @Option(name: .customLong("max-frames"), help: ArgumentHelp("Stop each input after this many frames.", valueName: "count"))
    var maxFrames: UInt64?

    @Option(help: ArgumentHelp("Stop after this many seconds of wall-clock time, also for files (a file read slower than real time covers less of itself; --max-frames counts frames).",
                               valueName: "seconds"))
    var duration: Double?

    @Option(help: ArgumentHelp("What to do when a plugin is busy: drop-late or block (default: drop-late for live sources, block for files and images).",
                               valueName: "policy"))
    var backpressure: BackpressurePolicy?

    @Option(help: ArgumentHelp("Where plugins run: none (in cvhost's process) or process (each in a worker process that is restarted when it crashes). A plugin's isolation= option overrides it.",
                               valueName: "none|process"))
    var isolation: PluginIsolation = .none

    @Option(name: .customLong("queue-depth"), help: ArgumentHelp("Frames that may wait for each plugin.", valueName: "frames"))
    var queueDepth: Int = 2

    @Option(name: .customLong("metrics-interval"), help: ArgumentHelp("Seconds between metrics events (0: only the final ones).",
                                                                      valueName: "seconds"))
    var metricsInterval: Double = 5

    @Option(help: ArgumentHelp("Read the options from a YAML file (see CONFIG FILE); options on the command line override it.",
                               valueName: "file"))
    var config: String?

    @Flag(name: .shortAndLong, help: "Log more on stderr (debug messages).")
    var verbose = false

    @Flag(name: .shortAndLong, help: "Log only warnings and errors on stderr.")
    var quiet = false

    /// Words that are no option's value: a shell's expansion of an unquoted glob, most often.
    @Argument(help: ArgumentHelp(visibility: .private))
    var unexpected: [String] = []

    /// The longest time any seconds option takes: its nanoseconds must fit in 64 bits.
    static let maxSeconds = 1e9

    /// Every long option of `cvhost run` (a test checks the config keys against `run --help`).
    static var longOptions: [String] {
        RunConfigFile.keys.sorted { $0.key < $1.key }.flatMap { key, kind in kind == .invertedFlag ? [key, "no-" + key] : [key] }
            + ["config", "help", "version"]
    }

    func validate() throws {
        // ArgumentParser checks this before it reports an unknown option, and an unknown option
        // followed by a value (--max-frame 3) reaches it as that value, unexpected: say which
        // option is unknown, and what was meant.
        let words = CommandLine.arguments.dropFirst().prefix { $0 != "--" }
        let optionNames = words.filter { $0.hasPrefix("--") }.map { String($0.dropFirst(2).prefix { $0 != "=" }) }
        let known = Self.longOptions
        if let typo = optionNames.first(where: { !known.contains($0) }) {
            let meant = Suggestion.closest(to: typo, in: known).map { ": did you mean '--\($0)'?" } ?? " (cvhost run --help lists them)"
            throw ValidationError("unknown option '--\(typo)'\(meant)")
        }
        if !unexpected.isEmpty {
            let words = unexpected.prefix(3).map { "'\($0)'" }.joined(separator: ", ") + (unexpected.count > 3 ? "..." : "")
            throw ValidationError("unexpected \(unexpected.count == 1 ? "argument" : "arguments") \(words): every input needs its own --input"
                                  + " (an unquoted glob such as shots/*.png is expanded by the shell: quote it, --input 'shots/*.png')")
        }
        if plugins.isEmpty { throw ValidationError("give at least one --plugin (cvhost plugins lists them)") }
        let specs = try InputSpec.parse(inputs: inputs, devices: devices)
        if !specs.contains(where: \.isCamera) && (format != nil || pixelFormat != nil || !controls.isEmpty) {
            throw ValidationError("--format, --pixel-format and --control apply to cameras, not to --input")
        }
        if reconnect && !specs.contains(where: \.canReconnect) {
            throw ValidationError("--reconnect applies to cameras and network streams (rtsp://, http://...), not to \(inputs.joined(separator: ", "))")
        }
        if let rtspTransport, !["tcp", "udp"].contains(rtspTransport) {
            throw ValidationError("--rtsp-transport takes tcp or udp, not \(rtspTransport)")
        }
        if openTimeout <= 0 || openTimeout > Self.maxSeconds || !openTimeout.isFinite {
            throw ValidationError("--open-timeout must be more than 0 seconds, and at most 1e9")
        }
        for pair in controls {
            guard let eq = pair.firstIndex(of: "=") else {
                throw ValidationError("--control \(pair): write NAME=VALUE, e.g. --control brightness=140")
            }
            let name = String(pair[..<eq])
            guard V4L2Controls.id(named: name) != nil else {
                throw ValidationError("unknown control '\(name)': known controls are \(V4L2Controls.table.map(\.name).joined(separator: ", "))")
            }
        }
        if queueDepth < 1 || queueDepth > 1000 { throw ValidationError("--queue-depth must be from 1 to 1000") }
        if metricsInterval < 0 || metricsInterval > Self.maxSeconds || !metricsInterval.isFinite {
            throw ValidationError("--metrics-interval must be 0 or more seconds, and at most 1e9")
        }
        if let duration, duration <= 0 || duration > Self.maxSeconds || !duration.isFinite {
            throw ValidationError("--duration must be more than 0 seconds, and at most 1e9 (about 31 years)")
        }
        if let maxFrames, maxFrames == 0 { throw ValidationError("--max-frames must be at least 1") }
        _ = try RunOutput.destinations(outputs)
    }

    func run() throws {
        Log.level = verbose ? .debug : (quiet ? .warning : .info)
        VideoFileDevice.setLibraryLogging(verbose: verbose)
        // A closed stdout must end the run quietly, not kill it with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        // The JSON lines alone on stdout: what plugins write to it goes to stderr.
        let results = StandardOutput.claim()
        let destinations = try RunOutput.destinations(outputs)
        // Plugins run in this process: if one crashes it, say which one, on which frame (on
        // stdout, when it is an output: a signal handler cannot reach the other outputs' queues).
        cvhost_guard_set_producer(String(decoding: JSONObject.producerFields, as: UTF8.self))
        cvhost_guard_install(ExitCodes.pluginCrashed, destinations.contains(.stdout) ? results : -1)
        defer { cvhost_guard_host_exiting() }
        if !destinations.contains(.stdout) { close(results) }

        let specs = try InputSpec.parse(inputs: inputs, devices: devices)
        let firstCamera = specs.first?.kind == .firstCamera ? V4L2Discovery.captureNodes().first : nil
        let ids = specs.map { $0.sourceID(cameraPath: firstCamera?.path) }
        let sessions = specs.map { _ in CaptureSession() }
        let stop = RunStop(sessions: sessions)
        // Outputs first (a file that cannot be opened ends the run before anything starts). A
        // stdout reader that went away ends the run quietly; lost lines end it with exit 4 (below).
        let liveView = http.isEnabled ? RunLiveView(options: http) : nil
        let output = try RunOutput.open(destinations, stdoutDescriptor: results, connectTimeout: openTimeout,
                                        taps: liveView.map { [$0.events] } ?? [], onStdoutClosed: { stop.request(.outputClosed) })
        // Whatever ends the run, the outputs deliver what was written (at the normal end: RunOutput.finish).
        defer { _ = output.finish() }
        let lines = RunLines(output: output, sources: specs.count)

        // Signals from here on: a stop asked for while plugins are created reaches the inputs
        // as they start (RunStop), and a create() that holds it is named (CreationWatch).
        let signals = SignalHandler { stop.request(.signal) }
        defer { signals.cancel() }

        // Plugins first: a bad --plugin is reported before any input is opened. Each input gets
        // its own runner of every plugin (own instances, queues and metrics). With --oneshot their
        // lines go through the gate that stops the run at the first result.
        let pluginSink: OutputSink = oneshot ? OneShotGate(output: output, stop: stop) : output
        var runners: [[PluginRunner]] = []
        defer { HungPluginStop.shutDown(Array(runners.joined()), output: output) }
        // Only while plugins are created: from then on, HungPluginStop names a hang.
        let creation = HungPluginStop.CreationWatch(stop: stop)
        defer { creation.finish() }
        do {
            let loader = PluginLoader()
            let requests = try plugins.map { spec in
                let request = try PluginRequest(parsing: spec)
                return (request, try loader.find(request.nameOrPath, isPath: request.isPath))
            }
            for id in ids {
                var forInput: [PluginRunner] = []
                defer { runners.append(forInput) }
                for (index, (request, plugin)) in requests.enumerated() {
                    creation.creating(plugin.name)
                    forInput.append(try PluginRunner(plugin: plugin, source: id, logPrefix: specs.count > 1 ? id : nil, index: index,
                                                     options: request.options, queueDepth: queueDepth, backpressure: backpressure,
                                                     isolation: isolation,
                                                     sink: pluginSink))
                }
            }
        } catch let error as PluginLoadError {
            throw fail(error.message, code: error.kind.exitCode)
        }
        creation.finish()

        // Then every input: one that cannot be opened ends the run before any starts (exit 3).
        var sources: [SourceRun] = []
        for (i, spec) in specs.enumerated() {
            let id = ids[i]
            do {
                let (device, settings) = try open(spec, firstCamera: firstCamera, onSkip: { path, reason in
                    Log.warning("skipped \(path): \(reason)")
                    lines.write(SessionEventLines.inputSkipped(source: id, path: path, reason: reason))
                })
                sources.append(try SourceRun(id: id, device: device, session: sessions[i], runners: runners[i], lines: lines,
                                             deviceSettings: settings, frameLimit: maxFrames, tagLogs: specs.count > 1))
            } catch let error as CaptureError {
                throw fail(spec.name.map { "\($0): " + error.message } ?? error.message, code: ExitCodes.inputUnavailable)
            } catch {
                throw fail("\(error)", code: ExitCodes.internalError)
            }
        }

        // Changes while running: over HTTP (with --http) and as JSON lines on stdin.
        let commands = RunCommands(sources: sources, lines: lines, stop: stop)
        try liveView?.start(sources: sources, output: output, commands: commands)
        lines.liveViewURL.withLock { $0 = liveView?.url }
        defer { liveView?.stop() }
        if stdinCommands && !specs.contains(where: \.readsStandardInput) { StdinCommands.start(commands, lines: lines) }

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

    /// The outputs deliver what waits; then the exit code: 4 when an output lost lines, 2 when an
    /// input failed (even while others went on), 3 when none of an input's images could be read,
    /// 21 when a plugin was quarantined, 23 when a plugin failed every frame, 22 when the run
    /// ended by itself with no result (`stoppedBy`: the stop asked for, nil when the inputs ended).
    private func conclude(_ sources: [SourceRun], output: OutputRouter, stoppedBy: StopReason?) throws {
        try RunOutput.finish(output)
        if sources.contains(where: \.report.failed) { throw ExitCode(ExitCodes.runtimeError) }
        // As a video none of whose frames decodes is refused at its opening (exit 3).
        if let unread = sources.first(where: { $0.device is StillImageDevice && $0.session.capturedFrameCount == 0 }) {
            throw fail("\(unread.id): none of its images could be read (each is named in an input.skipped line)",
                       code: ExitCodes.inputUnavailable)
        }
        let runners = sources.flatMap(\.runners)
        if let q = runners.first(where: \.isQuarantined) {
            throw fail("plugin \(q.plugin.name) was quarantined after repeated crashes: its results stop at plugin.quarantined",
                       code: ExitCodes.pluginQuarantined)
        }
        if let failing = runners.first(where: \.failedEveryFrame) {
            throw fail("plugin \(failing.plugin.name) failed on every frame (\(failing.source)): see its messages above and its metrics' frames.failed",
                       code: ExitCodes.pluginFailedEveryFrame)
        }
        let endedByItself = stoppedBy == nil || stoppedBy == .duration
        if endedByItself && runners.allSatisfy({ $0.resultCount == 0 }) {
            Log.info("nothing found: no plugin wrote a result (exit code \(ExitCodes.nothingFound))")
            throw ExitCode(ExitCodes.nothingFound)
        }
    }

    /// On the main thread, until every input has stopped: periodic metrics, progress (one input
    /// with a known length) and the --duration limit.
    private func paceUntilStopped(_ sources: [SourceRun], stop: RunStop, jsonDescriptor: Int32?) {
        let startNs = HostClock.monotonicNs()
        let deadline = duration.map { startNs + UInt64($0 * 1e9) }
        let interval = metricsInterval > 0 ? UInt64(metricsInterval * 1e9) : nil
        var nextMetrics = interval.map { startNs + $0 }
        let progress = sources.count == 1 ? Progress(device: sources[0].device, enabled: !quiet, jsonDescriptor: jsonDescriptor) : nil
        var nextProgress = progress.map { _ in startNs + 1_000_000_000 }
        // Waiting on the first input still running is enough: the loop ends when none is left.
        while let running = sources.first(where: { !$0.isStopped }) {
            // A look every half second at least: a stop under way may be held up by a plugin that hangs.
            let stopping = HungPluginStop.stoppingSince(sources, stop: stop)
            let hangCheck = HostClock.monotonicNs() + 500_000_000
            let wakeAt = [deadline, nextMetrics, nextProgress, hangCheck].compactMap { $0 }.min()!
            let waitSeconds = Double(wakeAt > HostClock.monotonicNs() ? wakeAt - HostClock.monotonicNs() : 0) / 1e9
            if running.session.waitUntilStopped(timeout: waitSeconds) { continue }
            let now = HostClock.monotonicNs()
            if let stopping {
                let hung = HungPluginStop.hung(sources, stoppingSince: stopping, now: now)
                if !hung.isEmpty { HungPluginStop.abandon(sources, stop: stop, hung: hung, now: now) }
            }
            if let d = deadline, now >= d { stop.request(.duration) }
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
