import CVHostCore
import CVHostLines
import Dispatch

/// The life of a plugin's worker process (isolation=process), as cvhost sees it:
///
///                 a call fails (crash, exit, hang, memory, protocol)
///     ┌─────────┐ ───────────────────────────────────────────────► ┌──────────────────────┐
///     │ running │                                                  │ restarting(at: time) │
///     └─────────┘ ◄─────────────────────────────────────────────── └──────────────────────┘
///          │        the first call after `at` starts a new worker      │ 5 failures within 60 s
///          │        (a failed start is one more failure; one that      ▼
///          │        wants descriptors or memory retries in 1 s)   ┌─────────────┐
///          │ shutdown                                             │ quarantined │  the run goes on
///          ▼                                                      └─────────────┘  without the plugin
///     ┌─────────┐
///     │ stopped │
///     └─────────┘
///
/// A reload (a Python plugin's file changed, or a `reload` command) starts a worker on the code now
/// on disk beside the running one (`startReplacement`); it takes the running one's place at the
/// lane's next call (`replace`), and the old one is destroyed. A replacement that fails to start
/// leaves the running worker as it was.
///
/// Each failure is said once, by the first lane to see it (`plugin.crashed`, and
/// `plugin.quarantined` with the fifth within the window); each restart is `plugin.restarted`.
/// While the plugin is not running, its lanes drop their frames (reason `restarting` or
/// `quarantined`). When to restart and when to give up is `RestartPolicy`'s (a value, tested alone).
final class WorkerSupervisor: Sendable {
    /// What the configuration allows a worker.
    struct Limits: Sendable {
        /// A call into the plugin that takes longer is a hang: the worker is killed and restarted.
        var callTimeoutMs: Int
        /// The same for starting (loading, shared_create, create), which may load models.
        var startTimeoutMs: Int
        /// Resident memory above which the worker is restarted; 0: no limit.
        var maxRSSBytes: UInt64
    }

    /// The wait before another try when a restart failed for want of a descriptor or memory.
    static let shortageRetryNs: UInt64 = 1_000_000_000

    private enum Phase {
        case running
        case restarting(atNs: UInt64)
        case quarantined
        case stopped
    }

    private struct State {
        var worker: WorkerProcess?
        var phase = Phase.running
        var generation: UInt64 = 0
        /// When a failed worker is started again, and when it is given up.
        var policy = RestartPolicy()
        var crashes = 0, timeouts = 0, memoryKills = 0, restarts = 0
        var lastRSSCheckNs: UInt64 = 0
        var downSinceNs: UInt64 = 0
        /// A restart failed for want of a descriptor or memory, and none has succeeded since (said once).
        var shortOfResources = false
        /// A reload's worker, ready to take the running one's place at the next call.
        var replacement: WorkerProcess?
    }
    private let state = Locked(State())
    /// The frames the first worker's instances asked for (request_frames, as `ready` carries them):
    /// every later worker (restarted, reloaded) must ask the same, for the output is set up for them.
    private let requested = Locked<(known: Bool, fields: [UInt32]?)>((false, nil))
    var frameRequestFields: [UInt32]? { requested.withLock { $0.fields } }
    /// Held while a worker is being (re)started: one start at a time.
    private let starting = SerialLock()

    private let hello: WorkerMessage.Hello
    private let program: WorkerProgram
    private let lanes: Int
    let limits: Limits
    /// The input its events (plugin.crashed...) name; nil: shared by every input.
    private let source: String?
    private let pluginName: String, pluginIndex: Int
    /// Writes a `plugin.*` event line.
    private let report: @Sendable (JSONObject) -> Void

    /// Starts the first worker and creates the plugin in it.
    /// - Throws: `PluginLoadError`: what create() said, or that the worker crashed or hung while starting.
    init(program: WorkerProgram, hello: WorkerMessage.Hello, lanes: Int, pluginName: String, source: String?, pluginIndex: Int,
         limits: Limits, report: @escaping @Sendable (JSONObject) -> Void) throws {
        self.program = program
        self.hello = hello
        self.lanes = lanes
        self.limits = limits
        self.source = source
        self.pluginName = pluginName
        self.pluginIndex = pluginIndex
        self.report = report
        let worker = try start(generation: 1)
        state.withLock { s in
            s.worker = worker
            s.generation = 1
        }
    }

    var isQuarantined: Bool {
        state.withLock { if case .quarantined = $0.phase { true } else { false } }
    }

    /// Why a lane's frame is dropped while no worker runs.
    var droppedReason: DropReason { isQuarantined ? .quarantined : .restarting }

    /// The worker, when one is running: starts a new one when a restart is due (on the calling
    /// lane's thread, while the others drop their frames).
    func liveWorker() -> WorkerProcess? {
        let now = HostClock.monotonicNs()
        var retired: WorkerProcess?
        defer { if let retired { retire(retired) } }
        let due = state.withLock { s -> Bool? in
            if case .running = s.phase, let r = s.replacement {
                s.replacement = nil
                // A restart after a crash since the reload began already runs the code on disk.
                if r.generation > s.generation {
                    retired = s.worker
                    s.worker = r
                    s.generation = r.generation
                } else {
                    retired = r
                }
            }
            switch s.phase {
            case .running: return s.worker != nil ? false : nil
            case .restarting(let at): return now >= at ? true : nil
            case .quarantined, .stopped: return nil
            }
        }
        guard let due else { return nil }
        if !due { return state.withLock { $0.worker } }
        return starting.run { () -> WorkerProcess? in
            // Another lane may have restarted it meanwhile.
            let generation: UInt64? = state.withLock { s in
                guard case .restarting(let at) = s.phase, now >= at else { return nil }
                s.phase = .restarting(atNs: .max)
                return s.generation + 1
            }
            guard let generation else { return state.withLock { $0.worker } }
            do {
                let worker = try start(generation: generation)
                let down = state.withLock { s -> UInt64 in
                    s.shortOfResources = false
                    s.worker = worker
                    s.generation = generation
                    s.phase = .running
                    s.restarts += 1
                    return HostClock.monotonicNs() - s.downSinceNs
                }
                var e = event("plugin.restarted", sequence: nil)
                e.set("pid", Int(worker.pid))
                e.set("restarts", state.withLock { $0.restarts })
                e.set("down_ms", Double(down) / 1e6, decimals: 1)
                report(e)
                Log.info("plugin \(pluginName) restarted (worker \(worker.pid))", source: hello.label)
                return worker
            } catch let error as PluginLoadError where error.isShortage {
                // The host could not make the worker (no descriptor or memory left): not the
                // plugin's failure, so no step towards quarantine; try again in a second.
                let first = state.withLock { s in
                    defer { s.shortOfResources = true }
                    if case .restarting = s.phase { s.phase = .restarting(atNs: HostClock.monotonicNs() + Self.shortageRetryNs) }
                    return !s.shortOfResources
                }
                if first { Log.error("plugin \(pluginName) cannot be restarted yet: \(error); trying again every second", source: hello.label) }
                return nil
            } catch {
                Log.error("plugin \(pluginName) could not be restarted: \(error)", source: hello.label)
                record(.startFailed, termination: nil, detail: { _ in }, callback: "create", sequence: nil)
                return nil
            }
        }
    }

    /// Starts a worker and creates the plugin in it: on the file as it is now, so its trust is
    /// checked again (a reload or restart must not run code another user could change since).
    private func start(generation: UInt64) throws -> WorkerProcess {
        try PluginFileTrust.check(hello.path)
        // The first worker may have been started while the plugin was described.
        let worker = try (generation == 1 ? WarmWorkers.take(program) : nil)
            ?? WorkerProcess(program: program, instances: lanes, generation: generation)
        let failure: String
        if worker.channels[0].send(.hello(hello)) {
            switch try awaitReady(worker) {
            case .message(.ready(let version, let request), _) where version == WorkerMessage.protocolVersion:
                let same = requested.withLock { r in
                    defer { r = (true, r.known ? r.fields : request) }
                    return !r.known || r.fields == request
                }
                guard same else {
                    worker.kill()
                    worker.reap()
                    throw PluginLoadError(.createFailed, "plugin \(pluginName) now asks for other frames (request_frames) than when it "
                                          + "started: restart cvhost to change the size or format of its frames")
                }
                return worker
            case .message(.ready(let version, _), _):
                worker.kill()
                worker.reap()
                throw PluginLoadError(.abiMismatch, "plugin \(pluginName)'s worker speaks worker protocol \(version); this cvhost speaks "
                                      + "\(WorkerMessage.protocolVersion): its runtime is not this cvhost's (unset CVHOST_PYTHON_RUNTIME)")
            case .message(.failed(let kind, let message), _):
                worker.reap()
                throw PluginLoadError(PluginLoadError.Kind(rawValue: kind) ?? .createFailed, message)
            case .timedOut:
                worker.kill()
                failure = "did not finish starting (create()) within \(limits.startTimeoutMs) ms: its worker was killed"
            default:
                failure = "crashed while starting"
            }
        } else {
            failure = "crashed while starting"
        }
        let how = Self.describe(worker.reap())
        throw PluginLoadError(.createFailed, "plugin \(pluginName) \(failure) (worker \(how))")
    }

    /// The worker's answer to hello (create() done), waited for up to the start timeout; its
    /// memory checked every 0.1 s meanwhile against max_rss_mb: a plugin's create() (a model's
    /// metadata that makes a list of billions) must not take the machine before its first frame.
    /// - Throws: `.createFailed` when the worker was ended for its memory.
    private func awaitReady(_ worker: WorkerProcess) throws(PluginLoadError) -> WorkerChannel.Received {
        let deadline = HostClock.monotonicNs() + UInt64(limits.startTimeoutMs) * 1_000_000
        while true {
            let now = HostClock.monotonicNs()
            let left = deadline > now ? Int32((deadline - now) / 1_000_000) : 0
            let step = limits.maxRSSBytes > 0 ? min(left, 100) : left
            let received = worker.channels[0].receive(timeoutMs: step)
            guard case .timedOut = received, step < left else { return received }
            if limits.maxRSSBytes > 0, let rss = worker.residentBytes, rss > limits.maxRSSBytes {
                worker.kill()
                worker.reap()
                throw PluginLoadError(.createFailed, "plugin \(pluginName) used \(rss / 1_048_576) MiB (max_rss_mb=\(limits.maxRSSBytes / 1_048_576)) "
                                      + "while starting (create()): its worker was killed")
            }
        }
    }

    /// After a call returned: a worker whose memory grew past the limit is ended (checked at most every 0.1 s).
    func checkMemory(_ w: WorkerProcess, _ sequence: UInt64?) {
        guard limits.maxRSSBytes > 0 else { return }
        let now = HostClock.monotonicNs()
        let due = state.withLock { s in
            guard now - s.lastRSSCheckNs >= 100_000_000 else { return false }
            s.lastRSSCheckNs = now
            return true
        }
        guard due, let rss = w.residentBytes, rss > limits.maxRSSBytes else { return }
        _ = failed(w, .memory(rss), "process", sequence)
    }

    /// The worker failed during a call (or must be ended): said once (by the first lane to see it),
    /// counted, and a restart or quarantine decided. - Returns: what becomes of the call that saw it.
    func failed(_ w: WorkerProcess, _ failure: WorkerFailure, _ callback: String, _ sequence: UInt64?) -> PluginCallOutcome {
        let first = state.withLock { s -> Bool in
            guard s.worker === w else { return false }
            s.worker = nil
            s.phase = .restarting(atNs: .max)
            s.downSinceNs = HostClock.monotonicNs()
            return true
        }
        guard first else { return .dropped(.restarting) }
        if failure.needsKill { w.kill() }
        let termination = w.reap()
        record(failure, termination: termination, detail: { e in
            switch termination {
            case .signaled(let s):
                e.set("signal", signalName(s))
                e.set("exit_status", nil as Int?)
            case .exited(let code):
                e.set("signal", nil as String?)
                e.set("exit_status", Int(code))
            }
            e.set("pid", Int(w.pid))
            if case .timeout = failure { e.set("timeout_ms", self.limits.callTimeoutMs) }
            if case .memory(let rss) = failure { e.set("rss_mb", Double(rss) / 1_048_576, decimals: 1) }
        }, callback: callback, sequence: sequence)
        let what = callback == "process" || callback == "ordered" ? "\(callback)() of frame \(sequence.map(String.init) ?? "?")" : "\(callback)()"
        let why = switch failure {
        case .timeout: "hung in \(what) for \(limits.callTimeoutMs) ms"
        case .memory(let rss): "used \(rss / 1_048_576) MiB (max_rss_mb=\(limits.maxRSSBytes / 1_048_576)) in \(what)"
        case .protocolError: "broke the worker protocol in \(what)"
        case .closed, .startFailed: "crashed in \(what)"
        }
        Log.error("plugin \(pluginName) \(why): worker \(w.pid) \(Self.describe(termination))", source: hello.label)
        return .crashed
    }

    /// Counts a failure and writes `plugin.crashed`; then `plugin.quarantined` when there were too many.
    private func record(_ failure: WorkerFailure, termination: WorkerProcess.Termination?, detail: (inout JSONObject) -> Void,
                        callback: String, sequence: UInt64?) {
        let now = HostClock.monotonicNs()
        let (total, quarantined, recent) = state.withLock { s -> (Int, Bool, Int) in
            switch failure {
            case .timeout: s.timeouts += 1
            case .memory: s.memoryKills += 1
            case .closed, .protocolError, .startFailed: s.crashes += 1
            }
            switch s.policy.failed(atNs: now) {
            case .quarantine(let failures):
                s.phase = .quarantined
                return (s.crashes + s.timeouts + s.memoryKills, true, failures)
            case .restart(let at):
                s.phase = .restarting(atNs: at)
                return (s.crashes + s.timeouts + s.memoryKills, false, s.policy.recentFailures.count)
            }
        }
        var e = event("plugin.crashed", sequence: sequence)
        e.set("reason", failure.reason(termination))
        e.set("callback", callback)
        detail(&e)
        e.set("crashes", total)
        report(e)
        guard quarantined else { return }
        var q = event("plugin.quarantined", sequence: sequence)
        q.set("crashes", recent)
        q.set("window_s", Double(RestartPolicy.windowNs) / 1e9, decimals: 0)
        report(q)
        Log.error("plugin \(pluginName) crashed \(recent) times within \(RestartPolicy.windowNs / 1_000_000_000) s: quarantined, the run goes on without it",
                  source: hello.label)
    }

    /// Destroys the instances in the worker and lets it end; kills it if destroy() hangs.
    func shutdown() {
        let (worker, replacement) = state.withLock { s -> (WorkerProcess?, WorkerProcess?) in
            defer {
                s.worker = nil
                s.replacement = nil
                s.phase = .stopped
            }
            return (s.worker, s.replacement)
        }
        replacement.map(destroy)
        worker.map(destroy)
    }

    /// Starts a worker on the plugin's code as it is now, beside the running one (a reload). Its
    /// lanes' sockets are new: frames' memory is sent to it again at its first calls.
    /// - Throws: `PluginLoadError`: what the new code said (a syntax error, create() failing).
    func startReplacement() throws -> WorkerProcess {
        // With several lanes, another lane could be in a call on the worker being replaced.
        guard lanes == 1 else { throw PluginLoadError(.createFailed, "plugin \(pluginName): only a worker of one lane is replaced while running") }
        return try starting.run {
            try start(generation: state.withLock { $0.generation } + 1)
        }
    }

    /// `worker` (from startReplacement) takes the running worker's place at the next call.
    func replace(with worker: WorkerProcess) {
        let stale = state.withLock { s -> WorkerProcess? in
            guard case .running = s.phase else { return worker }
            defer { s.replacement = worker }
            return s.replacement
        }
        stale.map(retire)
    }

    /// Destroys a worker no lane calls any more, away from the lane's thread.
    private func retire(_ worker: WorkerProcess) {
        DispatchQueue.global().async { self.destroy(worker) }
    }

    /// Destroys the instances in `worker` and lets it end; kills it if destroy() hangs.
    private func destroy(_ worker: WorkerProcess) {
        if worker.channels[0].send(.destroy) {
            switch worker.channels[0].receive(timeoutMs: Int32(limits.callTimeoutMs)) {
            case .message(.done, _):
                break
            case .timedOut:
                Log.error("plugin \(pluginName): destroy() did not return within \(limits.callTimeoutMs) ms: its worker was killed",
                          source: hello.label)
                worker.kill()
            default:
                Log.error("plugin \(pluginName) crashed in destroy(): worker \(worker.pid) \(Self.describe(worker.reap()))",
                          source: hello.label)
            }
        }
        worker.reap()
    }

    /// The metrics line's `worker` fields for the workers of one plugin: one, or (a Python plugin)
    /// one per instance: then the first's pid, the sum of their memory and counts, and the state
    /// of the one furthest from running.
    static func metrics(of supervisors: [WorkerSupervisor], into o: inout JSONObject) {
        let all = supervisors.map { v in v.state.withLock { ($0, $0.worker) } }
        let rank: (Phase) -> (Int, String) = { phase in
            switch phase {
            case .running: (0, "running")
            case .restarting: (1, "restarting")
            case .stopped: (2, "stopped")
            case .quarantined: (3, "quarantined")
            }
        }
        o.set("state", all.map { rank($0.0.phase) }.max { $0.0 < $1.0 }?.1 ?? "stopped")
        o.set("pid", all.first?.1.map { Int($0.pid) })
        o.set("pids", validatedJSON: Array("[\(all.compactMap { $0.1.map { String($0.pid) } }.joined(separator: ","))]".utf8))
        let rss = all.compactMap { $0.1?.residentBytes }
        o.set("rss_mb", rss.isEmpty ? nil : Double(rss.reduce(0, +)) / 1_048_576, decimals: 1)
        o.set("restarts", all.map(\.0.restarts).reduce(0, +))
        o.set("crashes", all.map(\.0.crashes).reduce(0, +))
        o.set("timeouts", all.map(\.0.timeouts).reduce(0, +))
        o.set("memory_restarts", all.map(\.0.memoryKills).reduce(0, +))
    }

    static func describe(_ t: WorkerProcess.Termination) -> String {
        switch t {
        case .signaled(let s): "killed by \(signalName(s))"
        case .exited(let code): "exited with status \(code)"
        }
    }

    private func event(_ name: String, sequence: UInt64?) -> JSONObject {
        JSONObject.envelope(event: name, source: source, plugin: pluginName, pluginIndex: pluginIndex, seq: sequence, tsNs: HostClock.wallNs())
    }
}
