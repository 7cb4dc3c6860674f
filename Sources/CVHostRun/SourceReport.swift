import CVHostCore
import CVHostEvidence
import CVHostLines
import CVHostMotion
import CVHostOutput
import CVHostPlugins
import CVHostV4L2

/// The lines of a whole run, shared by its inputs: keeps the promise that each input's final
/// metrics and then its `session.stopped` are its last lines, and that lines of no input (a
/// camera plugged in) stop once every input has written its final lines.
final class RunLines: Sendable {
    let output: OutputRouter
    private let openSources: Locked<Int>
    /// The live view's address (--http), for each input's session.started: set before any input starts.
    let liveViewURL = Locked<String?>(nil)

    init(output: OutputRouter, sources: Int) {
        self.output = output
        openSources = Locked(sources)
    }

    func write(_ line: JSONObject) {
        output.write(line)
    }

    /// A plugin's metrics line, with the run's `output` section (what became of the lines per output).
    func metrics(_ runner: PluginRunner, final: Bool) -> JSONObject {
        var e = runner.metricsEvent(final: final)
        e.set("output", array: output.statistics.map(\.json))
        return e
    }

    /// Writes an input's `count` last lines, made by `make`; after the last input's, lines of no
    /// input are dropped. Room is made for them first, so that the final metrics among them count
    /// every line the sinks' queues dropped (writing these lines drops none).
    func writeFinal(count: Int, _ make: () -> [JSONObject]) {
        openSources.withLock { open in
            output.makeRoom(for: count)
            make().forEach(output.write)
            open -= 1
        }
    }

    /// An input added while the run goes on: it too writes final lines before lines of no input stop.
    /// - Returns: false when every input has already written its final lines (the run is ending).
    func opened() -> Bool {
        openSources.withLock { open in
            guard open > 0 else { return false }
            open += 1
            return true
        }
    }

    /// Writes a line of no input while some input still runs.
    func writeWhileRunning(_ line: JSONObject) {
        openSources.withLock { open in
            if open > 0 { output.write(line) }
        }
    }
}

/// Writes one input's session events, each tagged with its source id, and its plugins' metrics:
/// periodic ones until its final ones, which come just before its `session.stopped`.
final class SourceReport: Sendable {
    let source: String
    /// Put in front of this input's messages on stderr (its id, when a run has several inputs).
    let logSource: String?
    let runners: [PluginRunner]
    let lines: RunLines
    /// What became of --control settings, reported in session.started with the plugins' hints.
    let deviceSettings: [SettingReport]
    /// Held while this input's final lines are written (so that nothing of it follows them): a
    /// write can block (a stdout reader that stopped reading), so what /metrics reads is not under it.
    private let finalWritten = Locked(false)
    /// The evidence room: the input's clip is finished before its final lines.
    private let evidence: Evidence?
    /// How the input's motion is looked for (--motion), for session.started; nil when it is not.
    private let motion: MotionSettings?
    private let counts = Locked<(failed: Bool, lost: [FrameLossReason: UInt64], error: String?, stopped: StopReason?)>((false, [:], nil, nil))

    init(source: String, logSource: String?, runners: [PluginRunner], lines: RunLines, deviceSettings: [SettingReport] = [],
         evidence: Evidence? = nil, motion: MotionSettings? = nil) {
        self.evidence = evidence
        self.motion = motion
        self.source = source
        self.logSource = logSource
        self.runners = runners
        self.lines = lines
        self.deviceSettings = deviceSettings
    }

    /// Frames the source lost before cvhost saw them, by reason, so far.
    var framesLost: [FrameLossReason: UInt64] { counts.withLock { $0.lost } }

    /// The input failed while running (a session.error was written).
    var failed: Bool { counts.withLock { $0.failed } }

    /// Once its session has stopped: why, and the error it failed with, if it did.
    var ending: (reason: String, error: String?)? {
        counts.withLock { c in c.stopped.map { ($0.rawValue, c.error) } }
    }

    func handle(_ event: SessionEvent) {
        switch event {
        case .stopped(let reason, _, _):
            counts.withLock { $0.stopped = reason }
            // Its clip finished with what it has, and its clip.saved written, before its final lines.
            evidence?.finishInput(source)
            finalWritten.withLock { written in
                guard !written else { return }  // written already by abandon()
                written = true
                lines.writeFinal(count: runners.count + 1) {
                    runners.map { lines.metrics($0, final: true) } + [SessionEventLines.line(for: event, source: source, runners: runners)]
                }
            }
        case .runtimeError(let error):
            counts.withLock { c in
                c.failed = true
                c.error = error.message
            }
            Log.error(error.message, source: logSource)
            lines.write(SessionEventLines.line(for: event, source: source, runners: runners))
        case .framesLost(let count, _, let reason):
            counts.withLock { $0.lost[reason, default: 0] += count }
            lines.write(SessionEventLines.line(for: event, source: source, runners: runners))
        case .started(let device, let format, let settings):
            let all = SessionEvent.started(device: device, format: format, settings: deviceSettings + settings)
            var line = SessionEventLines.line(for: all, source: source, runners: runners)
            line.set("http", lines.liveViewURL.withLock { $0 })
            if let motion { line.set("motion", object: SessionEventLines.motionSettings(motion)) } else { line.set("motion", nil as String?) }
            lines.write(line)
        default:
            lines.write(SessionEventLines.line(for: event, source: source, runners: runners))
        }
    }

    /// The run ends without waiting for this input's session to stop (a plugin hangs): its final
    /// metrics (naming the hung call) and its session.stopped, as the session would have written them.
    func abandon(reason: StopReason, framesCaptured: UInt64) {
        finalWritten.withLock { written in
            guard !written else { return }
            written = true
            let stopped = SessionEvent.stopped(reason: reason, framesCaptured: framesCaptured, framesLost: framesLost)
            lines.writeFinal(count: runners.count + 1) {
                runners.map { lines.metrics($0, final: true) } + [SessionEventLines.line(for: stopped, source: source, runners: runners)]
            }
        }
    }

    func writePeriodicMetrics() {
        finalWritten.withLock { written in
            guard !written else { return }
            for r in runners { lines.write(lines.metrics(r, final: false)) }
        }
    }
}
