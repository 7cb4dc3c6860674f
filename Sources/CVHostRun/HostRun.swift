import CVHostAnalytics
import CVHostCore
import CVHostV4L2

/// One run of `cvhost run`, as four stages that each open one thing and close it:
///
///     OutputStage ──► PluginStage ──► InputStage ──► RunningSession ──► (every input stopped)
///      outputs         plugins         inputs          sessions run,
///      opened          created         opened          final lines, conclusion
///
/// They open in that order (a bad one ends the run before anything starts) and close in the
/// reverse order, written once in `close`: what the running offered (camera reports, the live
/// view), then the plugins (reloads, then every instance destroyed), then the outputs (what waits
/// delivered).
///
/// A run changes nothing of the process it runs in: the executable sets up the process (log
/// level, SIGPIPE, stdout, the crash guard, the signals, which call `requestStop`) and ends it.
/// The run returns, or throws `RunFailure` with its exit code, or `StoppedBeforeRunning`; so runs
/// can be made side by side in one process, as its tests do.
public final class HostRun: Sendable {
    public let settings: RunSettings
    /// Where stdout's JSON lines go (the caller's: cvhost claims stdout for it, a test gives a file).
    private let resultsDescriptor: Int32
    private let sourceIDs: [String]
    private let sessions: [CaptureSession]
    private let firstCamera: V4L2NodeInfo?
    private let stop: RunStop
    /// Where the run is in its start (internal: tests wait for `.running`).
    let phase = Locked(StartupPhase.outputs)
    /// The running stage, while it runs: what a reload changes.
    private let running = Locked<RunningSession?>(nil)

    public init(_ settings: RunSettings, resultsDescriptor: Int32) {
        self.settings = settings
        self.resultsDescriptor = resultsDescriptor
        let specs = settings.inputs
        firstCamera = specs.first?.kind == .firstCamera ? V4L2Discovery.captureNodes().first : nil
        sourceIDs = specs.map { [firstCamera] in $0.sourceID(cameraPath: firstCamera?.path) }
        sessions = specs.map { _ in CaptureSession() }
        stop = RunStop(sessions: sessions)
    }

    /// Asks the run to stop cleanly (a signal): every input ends with its final lines. Any thread.
    public func requestStop(_ why: StopReason = .signal) {
        stop.request(why)
    }

    /// Applies settings read anew from the config file (SIGHUP) to the running run: inputs, tracks,
    /// zones and lines added, changed or removed; the rest goes on untouched (RunReload). Ignored
    /// (said) before the run runs. Any thread; returns at once.
    public func reload(_ settings: RunSettings) {
        guard let running = running.withLock({ $0 }) else {
            Log.warning("reload: the run is not running yet (or has ended): nothing changed")
            return
        }
        running.reload(settings)
    }

    /// Carries out one command, given as its JSON object, as a line on stdin is (its
    /// `control.changed` and other lines on the outputs): for a program that runs cvhost in its own
    /// process. Nil before the run runs and after it ended.
    package func handle(_ command: String, from origin: LiveCommands.Origin = .stdin) -> LiveCommands.Answer? {
        running.withLock { $0 }?.commands.handle(Array(command.utf8), from: origin)
    }

    /// GET /fleet's answer (with --http): a fleet's node says its site. Before the run runs.
    package func serveFleet(_ view: @escaping @Sendable () -> (status: Int, json: String)) {
        fleetView.withLock { $0 = view }
    }
    private let fleetView = Locked<(@Sendable () -> (status: Int, json: String))?>(nil)

    /// The run's plugins' names (what an input's `plugins` names), once it runs; nil before.
    package var pluginNames: [String]? {
        running.withLock { $0 }?.commands.changes?.pluginNames
    }

    /// What input `source`'s tracked plugins have counted, by plugin (its lines' and zones' totals):
    /// a fleet's node keeps them in its site's store, for the node that runs the input next.
    package func counts(of source: String) -> [String: CountTotals] {
        guard let rules = running.withLock({ $0 })?.commands.rules else { return [:] }
        return Dictionary(rules.totals().filter { $0.source == source }.map { ($0.plugin, $0.totals) }, uniquingKeysWith: { a, _ in a })
    }

    /// Input `source`'s lines and zones go on from `totals` (by plugin): an input taken over.
    package func goOn(source: String, from totals: [String: CountTotals]) {
        running.withLock { $0 }?.commands.rules?.goOn(source: source, from: totals)
    }

    /// Calls `body` once every input of the run has stopped (after a stop), before the outputs
    /// deliver what waits: a fleet's node gives its inputs back to the site then.
    package func whenInputsStopped(_ body: @escaping @Sendable () -> Void) {
        inputsStopped.withLock { $0.append(body) }
    }
    private let inputsStopped = Locked<[@Sendable () -> Void]>([])

    /// What the run is waiting for when a stop would end it at once, nothing having run yet (the
    /// outputs or inputs opening: a broker awaited, a FIFO with no writer, a server that does not
    /// answer, each of which may block); nil otherwise. For the executable's signal handler.
    public var stoppableAtOnce: String? { phase.withLock { $0.stoppableAtOnce } }

    /// Runs to the end.
    /// - Throws: `RunFailure` with the exit code and the message to say on stderr;
    ///   `StoppedBeforeRunning` (exit 0, no line) when a stop came while a plugin was read.
    public func run() throws {
        let s = settings
        for spec in s.inputs where spec.name == nil {
            if case .input(let text) = spec.kind, PasswordRedaction.hidesSomething(InputSpec.streams(text).source) {
                Log.warning("input \(spec.sourceID()) is written with its password and query values as *** in every line "
                            + "(source, MQTT topics, metrics); --input NAME=URL gives it a name of your choosing instead")
            }
        }
        // A run that waits for inputs counts as one more until its inputs have stopped: inputs can be added to it meanwhile.
        let outputs = try OutputStage(s, resultsDescriptor: resultsDescriptor, sources: s.inputs.count + (s.waitsForInputs ? 1 : 0), stop: stop)
        outputs.liveView?.fleetView.withLock { [fleetView] in $0 = fleetView.withLock { $0 } }
        phase.withLock { $0 = .plugins }
        // The counts of earlier runs (--state), which the lines and zones go on from.
        let kept = s.state.map { KeptTotals(beside: $0) }
        if let kept, let daily = s.resetCountsAt { kept.resetIfOlder(than: daily) }
        let rules = AnalyticsRules(s.analytics, kept: kept, motion: s.motion != nil)
        let plugins = try opening(after: outputs) { try PluginStage(s, sourceIDs: sourceIDs, sink: outputs.pluginSink, stop: stop, rules: rules) }
        phase.withLock { $0 = .inputs }
        let inputs = try opening(after: outputs, plugins) {
            try InputStage(s, sourceIDs: sourceIDs, sessions: sessions, firstCamera: firstCamera, runners: plugins.runners, lines: outputs.lines,
                           evidence: outputs.evidence)
        }
        phase.withLock { $0 = .running }
        let registry = RunInputs(inputs.sources, limit: s.maxInputs)
        let changes = InputChanges(s, inputs: registry, plugins: plugins, outputs: outputs, stop: stop, rules: rules)
        let counts = TotalsKeeper(kept: kept, rules: rules, lines: outputs.lines, sources: { registry.all.map(\.id) }, daily: s.resetCountsAt)
        let running = try opening(after: outputs, plugins) {
            try RunningSession(s, inputs: registry, changes: changes, rules: rules, counts: counts, outputs: outputs, stop: stop)
        }
        self.running.withLock { $0 = running }
        defer { self.running.withLock { $0 = nil } }
        counts.start()
        let jsonDescriptor = s.outputs.contains(.stdout) ? resultsDescriptor : nil
        let ending = running.runUntilStopped(jsonDescriptor: jsonDescriptor) { inputsStopped.withLock { $0 }.forEach { $0() } }
        // Every input's last frame has been counted: the counts kept as they end.
        counts.stop()
        switch ending {
        case .concluded(let outcome):
            try close(running, plugins, outputs, ending: outcome.failure)
        case .abandoned:
            // The hung call's plugin is never destroyed: its thread is still in it.
            try close(running, nil, outputs, ending: HungPluginStop.abandoned)
        }
    }

    /// The next stage, opened; or, when it cannot be, the stages opened before it closed (in the
    /// shutdown order) and its error thrown.
    private func opening<Stage>(after outputs: OutputStage, _ plugins: PluginStage? = nil, _ open: () throws -> Stage) throws -> Stage {
        do {
            return try open()
        } catch {
            try close(nil, plugins, outputs, ending: error)
            throw error
        }
    }

    /// The shutdown order, written once: what the running offered, then the plugins, then the
    /// outputs. Throws `ending` (the run's own end), or `HungPluginStop.abandoned` when a
    /// destroy() hung (its thread is left in it); returns when there is neither.
    private func close(_ running: RunningSession?, _ plugins: PluginStage?, _ outputs: OutputStage, ending: Error?) throws {
        running?.close()
        let destroyed = plugins?.close() ?? true
        outputs.close()
        // The sessions' event handlers hold what writes their lines (reports, runners, the outputs,
        // whose stdout holds the stop, which holds the sessions): let go, so that the run is freed.
        sessions.forEach { $0.eventHandler = nil }
        if !destroyed { throw HungPluginStop.abandoned }
        if let ending { throw ending }
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

private extension Result {
    var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
