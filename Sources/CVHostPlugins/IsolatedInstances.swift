import CVHostCore
import CVHostOutput
import CVHostPluginABI
import Glibc
import Synchronization

/// A plugin's instances in a worker process of their own (isolation=process): a crash, exit(),
/// hang or runaway memory of the plugin ends the worker, not cvhost. cvhost says so
/// (`plugin.crashed`), drops the frames that come meanwhile (reason `restarting`), starts a new
/// worker after a backoff (`plugin.restarted`), and after `quarantineAfter` crashes within
/// `quarantineWindow` gives the plugin up (`plugin.quarantined`): the run goes on without it.
///
/// Each instance has its own socket and frame transfer and is called only from its delivery worker's
/// thread; what the instances share (the worker, its state) is behind `state`.
final class IsolatedInstances: PluginInstances, @unchecked Sendable {
    // @unchecked Sendable: each `lanes` element is touched only by its instance's delivery worker
    // thread; the rest is behind locks or atomic.

    let count: Int
    let isolated = true
    private let hello: WorkerMessage.Hello
    private let source: String, pluginName: String, pluginIndex: Int
    private let limits: Limits
    /// Writes a `plugin.*` event line.
    private let report: @Sendable (JSONObject) -> Void

    /// What the configuration allows a worker.
    struct Limits: Sendable {
        /// A call into the plugin that takes longer is a hang: the worker is killed and restarted.
        var callTimeoutMs: Int
        /// The same for starting (loading, shared_create, create), which may load models.
        var startTimeoutMs: Int
        /// Resident memory above which the worker is restarted; 0: no limit.
        var maxRSSBytes: UInt64
    }

    /// Crashes within `quarantineWindowNs` that quarantine a plugin, and the backoff before each restart.
    static let quarantineAfter = 5
    static let quarantineWindowNs: UInt64 = 60_000_000_000
    /// The wait before another try when a restart failed for want of a descriptor or memory.
    static let shortageRetryNs: UInt64 = 1_000_000_000
    static func backoffNs(crashesInWindow n: Int) -> UInt64 {
        min(10_000_000_000, 100_000_000 << UInt64(max(0, min(n - 1, 10))))
    }

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
        var recentCrashes: [UInt64] = []
        var crashes = 0, timeouts = 0, memoryKills = 0, restarts = 0
        var lastRSSCheckNs: UInt64 = 0
        var downSinceNs: UInt64 = 0
        /// A restart failed for want of a descriptor or memory, and none has succeeded since (said once).
        var shortOfResources = false
    }
    private let state = Locked(State())
    /// Held while a worker is being (re)started: one start at a time.
    private let starting = Locked(())
    /// Each instance's call in progress.
    private let calls: Locked<[PluginCall?]>
    /// What belongs to one instance: how its frames reach the worker, and the frame it processed
    /// last (its flush's results belong to it).
    private final class Lane {
        let transfer = FrameTransfer()
        var lastStamp: HostServices.FrameStamp?
    }
    private let lanes: [Lane]
    /// The last frame through the ordered stage (shared_flush's results belong to it).
    private let lastOrdered = Locked<HostServices.FrameStamp?>(nil)
    private let invalid: RepeatedWarning
    /// Frames copied into a slot, and frames that went in the shared memory they were in.
    private let copiedFrames = Atomic<UInt64>(0)
    private let sharedFrames = Atomic<UInt64>(0)

    /// Starts the worker and creates the plugin's shared stage and instances in it.
    /// - Throws: `PluginLoadError`: what create() said (.createFailed, .badOptionValue), or that
    ///   the worker crashed or hung while starting (.createFailed).
    init(plugin: PluginInfo, configuration: PluginConfiguration, source: String, index: Int, label: String, limits: Limits,
         report: @escaping @Sendable (JSONObject) -> Void) throws {
        count = configuration.instances
        hello = WorkerMessage.Hello(path: plugin.path, pluginIndex: index, instances: count, label: label,
                                    options: configuration.pluginOptions)
        self.source = source
        pluginName = plugin.name
        pluginIndex = index
        self.limits = limits
        self.report = report
        invalid = RepeatedWarning(source: label)
        calls = Locked(Array(repeating: nil, count: count))
        lanes = (0..<count).map { _ in Lane() }
        // Frames made from now on are made where the worker can map them.
        SharedMemoryPool.shared.enable()
        let worker = try start(generation: 1)
        state.withLock { s in
            s.worker = worker
            s.generation = 1
        }
    }

    // MARK: - Calls

    func process(worker i: Int, frame: inout cvhost_frame, pixels: PixelBuffer, stamp: HostServices.FrameStamp) -> PluginCallOutcome {
        guard let w = liveWorker() else { return .dropped(droppedReason) }
        lanes[i].lastStamp = stamp
        do {
            guard let (way, memory) = try lanes[i].transfer.prepare(&frame, pixels: pixels, channel: w.channels[i], generation: w.generation)
            else { return died(w, .closed, "process", frame.sequence) }
            switch way {
            case .shared: sharedFrames.add(1, ordering: .relaxed)
            case .copied: copiedFrames.add(1, ordering: .relaxed)
            }
            return call(i, on: w, .process(.init(memory: memory, frame: frame)), "process", frame.sequence, stamp)
        } catch {
            Log.error("\(error)", source: hello.label)
            return .dropped(droppedReason)
        }
    }

    func ordered(worker i: Int, frame: inout cvhost_frame, pixels: PixelBuffer, stamp: HostServices.FrameStamp) -> PluginCallOutcome {
        guard let w = liveWorker() else { return .dropped(droppedReason) }
        lastOrdered.withLock { $0 = stamp }
        // process() prepared this frame: it is where it was (the runner holds `pixels`; nothing
        // else writes the slot). A worker restarted since then has not mapped it, and its
        // shared state never saw the frame's process(): the frame is lost to the restart.
        guard w.generation == lanes[i].transfer.generation else { return .dropped(.restarting) }
        return call(i, on: w, .ordered(.init(memory: lanes[i].transfer.lastMemory, frame: frame)), "ordered", frame.sequence, stamp)
    }

    func flush(worker i: Int) -> PluginCallOutcome {
        guard let w = liveWorker() else { return .dropped(droppedReason) }
        return call(i, on: w, .flush, "flush", nil, lanes[i].lastStamp)
    }

    func flushShared() -> PluginCallOutcome {
        guard let w = liveWorker() else { return .dropped(droppedReason) }
        return call(0, on: w, .sharedFlush, "shared_flush", nil, lastOrdered.withLock { $0 })
    }

    /// Destroys the instances in the worker and lets it end; kills it if destroy() hangs.
    func shutdown() {
        let worker = state.withLock { s -> WorkerProcess? in
            defer {
                s.worker = nil
                s.phase = .stopped
            }
            return s.worker
        }
        guard let worker else { return }
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

    var currentCalls: [PluginCall] { calls.withLock { $0.compactMap { $0 } } }

    var invalidResults: UInt64 { invalid.total }

    var isQuarantined: Bool {
        state.withLock { if case .quarantined = $0.phase { true } else { false } }
    }

    var workerMetrics: JSONObject? {
        let (s, worker) = state.withLock { ($0, $0.worker) }
        var o = JSONObject()
        let phase: String = switch s.phase {
        case .running: "running"
        case .restarting: "restarting"
        case .quarantined: "quarantined"
        case .stopped: "stopped"
        }
        o.set("state", phase)
        o.set("pid", worker.map { Int($0.pid) })
        o.set("rss_mb", worker?.residentBytes.map { Double($0) / 1_048_576 }, decimals: 1)
        o.set("restarts", s.restarts)
        o.set("crashes", s.crashes)
        o.set("timeouts", s.timeouts)
        o.set("memory_restarts", s.memoryKills)
        o.set("shared_frames", sharedFrames.load(ordering: .relaxed))
        o.set("copied_frames", copiedFrames.load(ordering: .relaxed))
        return o
    }

    // MARK: - One call

    /// Sends one call and collects its results until it is done, the worker dies, or the call
    /// times out (then the worker is killed).
    private func call(_ i: Int, on w: WorkerProcess, _ message: WorkerMessage, _ callback: String, _ sequence: UInt64?,
                      _ stamp: HostServices.FrameStamp?) -> PluginCallOutcome {
        let since = HostClock.monotonicNs()
        calls.withLock { $0[i] = PluginCall(callback: callback, sequence: sequence, sinceNs: since) }
        defer { calls.withLock { $0[i] = nil } }
        guard w.channels[i].send(message) else { return died(w, .closed, callback, sequence) }
        let deadline = since + UInt64(limits.callTimeoutMs) * 1_000_000
        var lines: [OutputLine] = []
        while true {
            let now = HostClock.monotonicNs()
            let left = now >= deadline ? 0 : Int32(min(UInt64(Int32.max), (deadline - now + 999_999) / 1_000_000))
            switch w.channels[i].receive(timeoutMs: left) {
            case .message(.result(let type, let json), _):
                // Checked here as in cvhost's own process: the worker is the plugin's, not to be trusted.
                do {
                    let checked = try type.withUnsafeBufferPointer { t in
                        try json.withUnsafeBufferPointer { try EmittedResult.check(type: t, json: $0) }
                    }
                    lines.append(EmittedResult(type: checked.type, json: checked.json, frame: stamp)
                        .line(source: source, plugin: pluginName, pluginIndex: pluginIndex))
                } catch {
                    invalid.record { "\(error) (\($0) so far)" }
                }
            case .message(.done(let status), _):
                checkMemory(w, sequence)
                return .returned(status: status, lines: lines)
            case .timedOut:
                return died(w, .timeout, callback, sequence)
            case .closed:
                return died(w, .closed, callback, sequence)
            case .message, .failed:
                return died(w, .protocolError, callback, sequence)
            }
        }
    }

    private func checkMemory(_ w: WorkerProcess, _ sequence: UInt64?) {
        guard limits.maxRSSBytes > 0 else { return }
        let now = HostClock.monotonicNs()
        let due = state.withLock { s in
            guard now - s.lastRSSCheckNs >= 100_000_000 else { return false }
            s.lastRSSCheckNs = now
            return true
        }
        guard due, let rss = w.residentBytes, rss > limits.maxRSSBytes else { return }
        _ = died(w, .memory(rss), "process", sequence)
    }

    // MARK: - Crashes, restarts, quarantine

    private enum Cause {
        case closed
        case timeout
        case memory(UInt64)
        case protocolError
    }

    private var droppedReason: DropReason {
        isQuarantined ? .quarantined : .restarting
    }

    /// The worker, when one is running: starts a new one when a restart is due (on this thread,
    /// while the others drop their frames).
    private func liveWorker() -> WorkerProcess? {
        let now = HostClock.monotonicNs()
        let due = state.withLock { s -> Bool? in
            switch s.phase {
            case .running: return s.worker != nil ? false : nil
            case .restarting(let at): return now >= at ? true : nil
            case .quarantined, .stopped: return nil
            }
        }
        guard let due else { return nil }
        if !due { return state.withLock { $0.worker } }
        return starting.withLock { _ -> WorkerProcess? in
            // Another thread may have restarted it meanwhile.
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
                // plugin's crash, so no step towards quarantine; try again in a second.
                let first = state.withLock { s in
                    defer { s.shortOfResources = true }
                    if case .restarting = s.phase { s.phase = .restarting(atNs: HostClock.monotonicNs() + Self.shortageRetryNs) }
                    return !s.shortOfResources
                }
                if first { Log.error("plugin \(pluginName) cannot be restarted yet: \(error); trying again every second", source: hello.label) }
                return nil
            } catch {
                Log.error("plugin \(pluginName) could not be restarted: \(error)", source: hello.label)
                recordCrash(reason: "start_failed", detail: { _ in }, callback: "create", sequence: nil)
                return nil
            }
        }
    }

    /// Starts a worker and creates the plugin in it.
    private func start(generation: UInt64) throws -> WorkerProcess {
        let worker = try WorkerProcess(instances: count, generation: generation)
        let failure: String
        if worker.channels[0].send(.hello(hello)) {
            switch worker.channels[0].receive(timeoutMs: Int32(limits.startTimeoutMs)) {
            case .message(.ready, _):
                return worker
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

    static func describe(_ t: WorkerProcess.Termination) -> String {
        switch t {
        case .signaled(let s): "killed by \(signalName(s))"
        case .exited(let code): "exited with status \(code)"
        }
    }

    /// The worker died or must: say so once (the first instance to see it), count it, and decide
    /// between a restart and quarantine. - Returns: what becomes of the call that saw it.
    private func died(_ w: WorkerProcess, _ cause: Cause, _ callback: String, _ sequence: UInt64?) -> PluginCallOutcome {
        let first = state.withLock { s -> Bool in
            guard s.worker === w else { return false }
            s.worker = nil
            s.phase = .restarting(atNs: .max)
            s.downSinceNs = HostClock.monotonicNs()
            return true
        }
        guard first else { return .dropped(.restarting) }
        switch cause {
        case .timeout, .memory, .protocolError: w.kill()
        case .closed: break
        }
        let termination = w.reap()
        let reason: String
        switch cause {
        case .timeout: reason = "timeout"
        case .memory: reason = "memory"
        case .protocolError: reason = "protocol"
        case .closed:
            if case .signaled = termination { reason = "signal" } else { reason = "exit" }
        }
        recordCrash(reason: reason, detail: { e in
            switch termination {
            case .signaled(let s):
                e.set("signal", signalName(s))
                e.set("exit_status", nil as Int?)
            case .exited(let code):
                e.set("signal", nil as String?)
                e.set("exit_status", Int(code))
            }
            e.set("pid", Int(w.pid))
            if case .timeout = cause { e.set("timeout_ms", self.limits.callTimeoutMs) }
            if case .memory(let rss) = cause { e.set("rss_mb", Double(rss) / 1_048_576, decimals: 1) }
        }, callback: callback, sequence: sequence)
        let what = callback == "process" || callback == "ordered" ? "\(callback)() of frame \(sequence.map(String.init) ?? "?")" : "\(callback)()"
        let why = switch cause {
        case .timeout: "hung in \(what) for \(limits.callTimeoutMs) ms"
        case .memory(let rss): "used \(rss / 1_048_576) MiB (max_rss_mb=\(limits.maxRSSBytes / 1_048_576)) after \(what)"
        case .protocolError: "broke the worker protocol in \(what)"
        case .closed: "crashed in \(what)"
        }
        Log.error("plugin \(pluginName) \(why): worker \(w.pid) \(Self.describe(termination))", source: hello.label)
        return .crashed
    }

    /// Counts a crash and writes `plugin.crashed`; then `plugin.quarantined` when there were too many.
    private func recordCrash(reason: String, detail: (inout JSONObject) -> Void, callback: String, sequence: UInt64?) {
        let now = HostClock.monotonicNs()
        let (total, quarantined, recent) = state.withLock { s -> (Int, Bool, Int) in
            switch reason {
            case "timeout": s.timeouts += 1
            case "memory": s.memoryKills += 1
            default: s.crashes += 1
            }
            s.recentCrashes = s.recentCrashes.filter { now - $0 < Self.quarantineWindowNs } + [now]
            let recent = s.recentCrashes.count
            if recent >= Self.quarantineAfter {
                s.phase = .quarantined
            } else {
                s.phase = .restarting(atNs: now + Self.backoffNs(crashesInWindow: recent))
            }
            return (s.crashes + s.timeouts + s.memoryKills, recent >= Self.quarantineAfter, recent)
        }
        var e = event("plugin.crashed", sequence: sequence)
        e.set("reason", reason)
        e.set("callback", callback)
        detail(&e)
        e.set("crashes", total)
        report(e)
        guard quarantined else { return }
        var q = event("plugin.quarantined", sequence: sequence)
        q.set("crashes", recent)
        q.set("window_s", Double(Self.quarantineWindowNs) / 1e9, decimals: 0)
        report(q)
        Log.error("plugin \(pluginName) crashed \(recent) times within \(Self.quarantineWindowNs / 1_000_000_000) s: quarantined, the run goes on without it",
                  source: hello.label)
    }

    private func event(_ name: String, sequence: UInt64?) -> JSONObject {
        JSONObject.envelope(event: name, source: source, plugin: pluginName, pluginIndex: pluginIndex, seq: sequence, tsNs: HostClock.wallNs())
    }
}
