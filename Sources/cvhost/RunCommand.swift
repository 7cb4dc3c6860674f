import ArgumentParser
import CPluginGuard
import CVHostCore
import CVHostPlugins
import CVHostSources
import CVHostV4L2
import Dispatch
import Foundation
import Synchronization

extension BackpressurePolicy: ExpressibleByArgument {}

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run plugins on an input and write their results to stdout as JSON Lines.",
        discussion: """
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
            Network streams are live: late frames are dropped by default, frames are stamped on arrival, media time is the stream's. Standard input and pipes are read like files (nothing dropped), in a format that needs no seeking (MPEG-TS, Matroska). A password in a URL is used, never printed (user:***@). An open that fails (refused, not found, wrong credentials, no answer within --open-timeout) is exit 3; no data for 2 s is session.interrupted; a lost connection is session.error and exit 2, or with --reconnect a new connection with backoff and session.interruption_ended when frames flow.

            PLUGINS (--plugin NAME[:key=value,...], repeatable)
            NAME is looked up as libcvhost-NAME.so in $CVHOST_PLUGIN_PATH, beside this executable, and in <prefix>/lib/cvhost/plugins; a path (./libfoo.so) loads that file. `cvhost plugins` lists them with their options. A comma inside a value is written \\,. Every plugin also takes these host options:
              instances=N|auto  N instances on N threads (auto: one per core)
              queue_depth=N     frames that may wait (default --queue-depth)
              backpressure=P    drop-late or block (default --backpressure)
              max_fps=F         at most F frames per second of media time
              mirror=true       flip frames left to right for this plugin
              rotate=90|180|270 turn frames clockwise for this plugin (after mirror)

            BACK-PRESSURE
            drop-late (live sources' default): at most --queue-depth frames wait for each plugin; when a newer frame arrives, the oldest waiting one is dropped and counted. A slow plugin never slows the source or another plugin. block (the default for files and images): the source waits; nothing is lost.

            OUTPUT
            stdout carries JSON Lines only: session.started, result, metrics, session.error, session.stopped and more (with a camera, device.connected and device.disconnected when cameras are plugged in or out). The final metrics of every plugin and then session.stopped are always the last lines. Messages for people go to stderr.
            """)

    @Option(name: .customLong("plugin"), help: ArgumentHelp("A plugin to run, with options: NAME[:key=value,...]. Repeatable.",
                                                            valueName: "spec"))
    var plugins: [String] = []

    @Option(help: ArgumentHelp("What to read: a video file, an image, a folder, a quoted glob, a stream URL (rtsp://, http://...), - for stdin, or testsrc[:WxH][@FPS].",
                               valueName: "source"))
    var input: String?

    @Option(help: ArgumentHelp("A V4L2 camera, e.g. /dev/video0 (default, with no --input: the first camera).", valueName: "path"))
    var device: String?

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

    @Option(name: .customLong("open-timeout"), help: ArgumentHelp("Seconds a stream URL may take to open (default 10).", valueName: "seconds"))
    var openTimeout: Double = 10

    @Option(name: .customLong("max-frames"), help: "Stop after this many frames.")
    var maxFrames: UInt64?

    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds"))
    var duration: Double?

    @Option(help: ArgumentHelp("What to do when a plugin is busy: drop-late or block (default: drop-late for live sources, block for files and images).",
                               valueName: "policy"))
    var backpressure: BackpressurePolicy?

    @Option(name: .customLong("queue-depth"), help: "Frames that may wait for each plugin.")
    var queueDepth: Int = 2

    @Option(name: .customLong("metrics-interval"), help: ArgumentHelp("Seconds between metrics events (0: only the final ones).",
                                                                      valueName: "seconds"))
    var metricsInterval: Double = 5

    @Flag(name: .shortAndLong, help: "Log more on stderr (debug messages).")
    var verbose = false

    @Flag(name: .shortAndLong, help: "Log only warnings and errors on stderr.")
    var quiet = false

    func validate() throws {
        if plugins.isEmpty { throw ValidationError("give at least one --plugin (cvhost plugins lists them)") }
        if input != nil && device != nil { throw ValidationError("give either --input or --device, not both") }
        if input != nil && (format != nil || pixelFormat != nil || !controls.isEmpty) {
            throw ValidationError("--format, --pixel-format and --control apply to cameras, not to --input")
        }
        if let input, reconnect, StreamLocation(input)?.scheme == nil {
            throw ValidationError("--reconnect applies to cameras and network streams (rtsp://, http://...), not to \(input)")
        }
        if let rtspTransport, !["tcp", "udp"].contains(rtspTransport) {
            throw ValidationError("--rtsp-transport takes tcp or udp, not \(rtspTransport)")
        }
        if openTimeout <= 0 || !openTimeout.isFinite { throw ValidationError("--open-timeout must be more than 0 seconds") }
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
        if metricsInterval < 0 || !metricsInterval.isFinite { throw ValidationError("--metrics-interval must be 0 or more seconds") }
        if let duration, duration <= 0 || !duration.isFinite { throw ValidationError("--duration must be more than 0 seconds") }
        if let maxFrames, maxFrames == 0 { throw ValidationError("--max-frames must be at least 1") }
    }

    func run() throws {
        Log.level = verbose ? .debug : (quiet ? .warning : .info)
        VideoFileDevice.setLibraryLogging(verbose: verbose)
        // A closed stdout must end the run quietly, not kill it with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        // Plugins run in this process: if one crashes it, say which one, on which frame.
        cvhost_guard_install(ExitCodes.pluginCrashed, STDOUT_FILENO)
        let session = CaptureSession()
        // A reader that went away ends the run quietly; a full disk ends it with exit 4 (below).
        let writer = JSONLineWriter(onClosed: { session.requestStop(reason: .outputClosed) })

        // Plugins first: a bad --plugin is reported before any input is opened.
        let loader = PluginLoader()
        var runners: [PluginRunner] = []
        do {
            for (index, spec) in plugins.enumerated() {
                let request = try PluginRequest(parsing: spec)
                let plugin = try loader.load(request.nameOrPath, isPath: request.isPath)
                runners.append(try PluginRunner(plugin: plugin, index: index, options: request.options, queueDepth: queueDepth,
                                                backpressure: backpressure, writer: writer))
            }
        } catch let error as PluginLoadError {
            runners.forEach { $0.shutdown() }
            throw fail(error.message, code: error.kind.exitCode)
        }
        defer { runners.forEach { $0.shutdown() } }

        let captureDevice: CaptureDevice
        var cameraSettings: [SettingReport] = []
        do {
            if let input {
                var streamOptions = StreamOptions()
                streamOptions.rtspTransport = rtspTransport
                streamOptions.openTimeout = openTimeout
                streamOptions.reconnect = reconnect
                captureDevice = try InputResolver.device(for: input, streamOptions: streamOptions, onSkip: { path, reason in
                    Log.warning("skipped \(path): \(reason)")
                    writer.write(SessionEventLines.inputSkipped(path: path, reason: reason))
                })
            } else {
                let camera = try openCamera()
                cameraSettings = try configure(camera)
                camera.reconnects = reconnect
                captureDevice = camera
            }
        } catch let error as CaptureError {
            throw fail(error.message, code: ExitCodes.inputUnavailable)
        }

        let report = RunReport(runners: runners, writer: writer, deviceSettings: cameraSettings)
        session.frameLimit = maxFrames
        session.eventHandler = { event in report.handle(event) }
        do {
            try session.addInput(CaptureDeviceInput(device: captureDevice))
            session.beginConfiguration()
            for r in runners { try session.addOutput(r.output) }
            session.commitConfiguration()
        } catch {
            throw fail("\(error)", code: ExitCodes.internalError)
        }

        let signals = SignalHandler { session.requestStop(reason: .signal) }
        defer { signals.cancel() }
        // With a camera, cameras plugged in or out while running are reported (not for files).
        let monitor = captureDevice is V4L2CaptureDevice ? startDeviceMonitor(report) : nil
        defer { monitor?.cancel() }
        do {
            try session.startRunning()
        } catch let error as CaptureError {
            throw fail(error.message, code: ExitCodes.inputUnavailable)
        }
        Log.debug("running \(captureDevice.localizedName) with \(runners.map(\.output.label).joined(separator: ", "))")

        // The main thread paces periodic metrics, progress and the duration limit until the session stops.
        let startNs = HostClock.monotonicNs()
        let deadline = duration.map { startNs + UInt64($0 * 1e9) }
        let interval = metricsInterval > 0 ? UInt64(metricsInterval * 1e9) : nil
        var nextMetrics = interval.map { startNs + $0 }
        let progress = Progress(device: captureDevice, enabled: !quiet)
        var nextProgress = progress.map { _ in startNs + 1_000_000_000 }
        while true {
            let wakeAt = [deadline, nextMetrics, nextProgress].compactMap { $0 }.min()
            let waitSeconds = wakeAt.map { Double($0 > HostClock.monotonicNs() ? $0 - HostClock.monotonicNs() : 0) / 1e9 } ?? 3600
            if session.waitUntilStopped(timeout: waitSeconds) { break }
            let now = HostClock.monotonicNs()
            if let d = deadline, now >= d { session.requestStop(reason: .duration) }
            if let n = nextMetrics, now >= n {
                report.writePeriodicMetrics()
                nextMetrics = n + interval!
            }
            if let n = nextProgress, now >= n {
                progress?.show(frames: session.capturedFrameCount, elapsedNs: now - startNs)
                nextProgress = n + 1_000_000_000
            }
        }
        progress?.finish(frames: session.capturedFrameCount)
        if let source = captureDevice as? DamageReporting, source.damagedPackets > 0 {
            Log.warning("\(source.localizedName): \(source.damagedPackets) damaged packets skipped (FFmpeg concealed what it could; -v shows its messages)")
        }
        try checkOutput(writer)
        if report.failed { throw ExitCode(ExitCodes.runtimeError) }
    }
}

extension RunCommand {
    /// The camera of --device, or the first one.
    func openCamera() throws -> V4L2CaptureDevice {
        if let device { return try V4L2CaptureDevice(path: device) }
        guard let first = V4L2Discovery.captureNodes().first else {
            throw CaptureError(.inputUnavailable, "no camera found (cvhost devices lists them): give --device or --input")
        }
        Log.info("using \(first.path) (\(first.card))")
        return try V4L2CaptureDevice(path: first.path)
    }

    func startDeviceMonitor(_ report: RunReport) -> V4L2DeviceMonitor? {
        do {
            return try V4L2DeviceMonitor { change in
                switch change {
                case .connected(let node): Log.info("camera connected: \(node.path) (\(node.card))")
                case .disconnected(let node): Log.info("camera disconnected: \(node.path) (\(node.card))")
                }
                report.writeDeviceChange(change)
            }
        } catch let error as CaptureError {
            Log.warning("\(error.message); cameras plugged in or out will not be reported")
            return nil
        } catch {
            return nil
        }
    }

    /// Applies --format, --pixel-format and --control under the configuration lock; returns
    /// what was requested and applied for each control.
    func configure(_ camera: V4L2CaptureDevice) throws -> [SettingReport] {
        try camera.lockForConfiguration()
        defer { camera.unlockForConfiguration() }
        let request = try FormatRequest(parsing: format ?? "medium", pixelFormat: pixelFormat)
        if request.size != .inputPriority {
            let (chosen, fps) = try request.choose(from: camera.formats)
            try camera.setActiveFormat(chosen, frameRate: fps)
            Log.debug("format \(camera.activeFormat.map(\.description) ?? "?") at \(camera.activeFrameRate) fps")
        }
        return try controls.map { pair in
            let eq = pair.firstIndex(of: "=")!
            let report = try camera.setControl(String(pair[..<eq]), to: String(pair[pair.index(after: eq)...]))
            if report.status != .applied {
                Log.warning("control \(report.setting)=\(report.requested): \(report.status.rawValue)\(report.message.map { ": " + $0 } ?? "")")
            }
            return report
        }
    }
}

/// Writes session events, keeping the promise that final metrics and then `session.stopped`
/// are the last lines, with no periodic metrics after them.
final class RunReport: Sendable {
    let runners: [PluginRunner]
    let writer: JSONLineWriter
    /// What became of --control settings, reported in session.started with the plugins' hints.
    let deviceSettings: [SettingReport]
    private let state = Mutex<(finalWritten: Bool, failed: Bool)>((false, false))

    init(runners: [PluginRunner], writer: JSONLineWriter, deviceSettings: [SettingReport] = []) {
        self.runners = runners
        self.writer = writer
        self.deviceSettings = deviceSettings
    }

    var failed: Bool { state.withLock { $0.failed } }

    func handle(_ event: SessionEvent) {
        switch event {
        case .stopped:
            state.withLock { s in
                s.finalWritten = true
                for r in runners { writer.write(r.metricsEvent(final: true)) }
                writer.write(SessionEventLines.line(for: event, runners: runners))
            }
        case .runtimeError(let error):
            state.withLock { $0.failed = true }
            Log.error(error.message)
            writer.write(SessionEventLines.line(for: event, runners: runners))
        case .started(let device, let format, let settings):
            writer.write(SessionEventLines.line(for: .started(device: device, format: format, settings: deviceSettings + settings),
                                                runners: runners))
        default:
            writer.write(SessionEventLines.line(for: event, runners: runners))
        }
    }

    /// A camera plugged in or out; nothing after the final lines.
    func writeDeviceChange(_ change: V4L2DeviceMonitor.Change) {
        state.withLock { s in
            guard !s.finalWritten else { return }
            writer.write(SessionEventLines.deviceChange(change))
        }
    }

    func writePeriodicMetrics() {
        state.withLock { s in
            guard !s.finalWritten else { return }
            for r in runners { writer.write(r.metricsEvent(final: false)) }
        }
    }
}

/// SIGINT and SIGTERM: the first asks the session to stop cleanly (final metrics are written);
/// a second one exits at once with 130.
final class SignalHandler: @unchecked Sendable {
    // @unchecked Sendable: `sources` is set once in init; DispatchSource objects are thread-safe.
    private let sources: [DispatchSourceSignal]
    private let count = Atomic(0)

    init(onFirst: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "cvhost.signals")
        var made: [DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            made.append(DispatchSource.makeSignalSource(signal: sig, queue: queue))
        }
        sources = made
        for source in sources {
            source.setEventHandler { [weak self] in
                guard let self else { return }
                if self.count.add(1, ordering: .relaxed).newValue == 1 {
                    Log.info("stopping (signal again to exit at once)")
                    onFirst()
                } else {
                    Log.warning("exiting without final metrics")
                    exit(ExitCodes.forcedStop)
                }
            }
            source.resume()
        }
    }

    func cancel() { sources.forEach { $0.cancel() } }
}
