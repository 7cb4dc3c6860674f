import CVHostCore
import CVHostLines
import CVHostPluginABI
import Dispatch
import Synchronization

/// A plugin's instances in a worker process of their own (isolation=process): a crash, exit(),
/// hang or runaway memory of the plugin ends the worker, not cvhost. The worker's life (start,
/// failures, restarts, quarantine) is `WorkerSupervisor`'s; one call to it is a `WorkerCall`.
/// A C plugin's instances share one worker (a socket each); a Python plugin's each have a worker
/// of their own, so that Python's global interpreter lock does not make them take turns.
///
/// Lane i is instance i: its socket in the worker, how its frames reach the worker (shared memory,
/// or a copy), the frame it processed last. It is called only from delivery worker i's thread.
final class IsolatedInstances: PluginInstances, @unchecked Sendable {
    // @unchecked Sendable: each `lanes` element is touched only by its own thread; the rest is
    // behind locks or atomic.

    let count: Int
    let isolated = true
    let frameRequest: FrameRequest?
    /// One supervisor for every lane, or (Python) one for each.
    let supervisors: [WorkerSupervisor]
    private let label: String
    private let results: WorkerCall.Results
    /// The plugin takes several frames in one call (process_batch).
    private let takesBatches: Bool

    /// Each lane's call in progress.
    private let calls: Locked<[PluginCall?]>
    /// What belongs to one lane: how its frames reach the worker, and the frame it processed
    /// last (its flush's results belong to it).
    private final class Lane {
        let transfer = FrameTransfer()
        var lastStamp: HostServices.FrameStamp?
    }
    private let lanes: [Lane]
    /// The last frame through the ordered stage (shared_flush's results belong to it).
    private let lastOrdered = Locked<HostServices.FrameStamp?>(nil)
    /// Frames copied into a slot, and frames that went in the shared memory they were in.
    private let copiedFrames = Atomic<UInt64>(0)
    private let sharedFrames = Atomic<UInt64>(0)

    /// Starts the worker and creates the plugin's shared stage and instances in it.
    /// - Throws: `PluginLoadError`: what create() said (.createFailed, .badOptionValue), or that
    ///   the worker crashed or hung while starting (.createFailed).
    init(plugin: PluginInfo, configuration: PluginConfiguration, source: String?, index: Int, label: String,
         limits: WorkerSupervisor.Limits, report: @escaping @Sendable (JSONObject) -> Void) throws {
        count = configuration.instances
        self.label = label
        takesBatches = plugin.takesBatches
        results = WorkerCall.Results(source: source ?? "", plugin: plugin.name, pluginIndex: index, invalid: RepeatedWarning(source: label))
        calls = Locked(Array(repeating: nil, count: count))
        lanes = (0..<count).map { _ in Lane() }
        // Frames made from now on are made where the worker can map them.
        SharedMemoryPool.shared.enable()
        let perLane = plugin.runtime == .python
        let program = perLane ? try PythonPlugin.workerProgram(path: plugin.path) : WorkerProgram.host()
        // A Python worker runs in its plugin's folder: it is given the plugin's absolute path.
        let path = perLane ? PythonPlugin.placed(plugin.path).path : plugin.path
        let total = configuration.instances, options = configuration.pluginOptions
        let hellos = (0..<(perLane ? total : 1)).map { worker in
            WorkerMessage.Hello(path: path, pluginIndex: index, instances: perLane ? 1 : total, firstInstance: worker,
                                instanceCount: total, label: label, options: options)
        }
        // Python's workers start side by side: each imports the plugin's modules (numpy, OpenCV: a
        // quarter of a second or more), which would else add up.
        let made = Locked([Result<WorkerSupervisor, Error>?](repeating: nil, count: perLane ? count : 1))
        DispatchQueue.concurrentPerform(iterations: perLane ? count : 1) { i in
            let r = Result {
                try WorkerSupervisor(program: program, hello: hellos[i], lanes: hellos[i].instances, pluginName: plugin.name,
                                     source: source, pluginIndex: index, limits: limits, report: report)
            }
            made.withLock { $0[i] = r }
        }
        let results = made.withLock { $0.compactMap { $0 } }
        let started = results.compactMap { try? $0.get() }
        if let failure = results.lazy.compactMap({ r -> Error? in if case .failure(let e) = r { e } else { nil } }).first {
            started.forEach { $0.shutdown() }
            throw failure
        }
        supervisors = started
        // Every worker's instances asked for the same frames (a Python plugin's each in its own worker).
        let asked = Set(started.map(\.frameRequestFields))
        guard asked.count == 1, let fields = started.first?.frameRequestFields else {
            frameRequest = nil
            if asked.count > 1 {
                started.forEach { $0.shutdown() }
                throw PluginLoadError(.createFailed, "plugin \(plugin.name): its instances asked for frames of different sizes or formats "
                                      + "(request_frames): each must ask the same")
            }
            return
        }
        guard let request = FrameRequest(fields: fields, declared: plugin.pixelFormats) else {
            started.forEach { $0.shutdown() }
            throw PluginLoadError(.createFailed, "plugin \(plugin.name) asked for frames cvhost cannot make (request_frames \(fields)): "
                                  + "a size of 16 to 8192 each side, stretch or letterbox, a pad of 0-255, and one of its own pixel formats")
        }
        frameRequest = request
    }

    /// Lane `i`'s supervisor, and its socket's index in that supervisor's worker.
    private func route(_ i: Int) -> (supervisor: WorkerSupervisor, channel: Int) {
        supervisors.count == 1 ? (supervisors[0], i) : (supervisors[i], 0)
    }

    // MARK: - Calls

    func process(lane i: Int, frame: inout cvhost_frame, pixels: PixelBuffer, full: PixelBuffer?,
                 stamp: HostServices.FrameStamp, source: String) -> PluginCallOutcome {
        let (outcomes, placed) = send(lane: i, [FrameCall(frame: frame, pixels: pixels, full: full, stamp: stamp, source: source)])
        // The frame as the worker read it (its planes as offsets into memory it has): ordered() sends it again.
        if let placed = placed.first { frame = placed }
        return outcomes[0]
    }

    /// One message for all the frames when the plugin takes batches (process_batch), else one each.
    func processBatch(lane i: Int, _ frames: [FrameCall]) -> [PluginCallOutcome] {
        if frames.count > 1 && !takesBatches {
            return frames.flatMap { send(lane: i, [$0]).outcomes }
        }
        return send(lane: i, frames).outcomes
    }

    /// Sends `frames` in one message and collects each one's outcome; and the frames as placed for
    /// the worker (none when they could not be).
    private func send(lane i: Int, _ frames: [FrameCall]) -> (outcomes: [PluginCallOutcome], placed: [cvhost_frame]) {
        let supervisor = route(i).supervisor
        let sequence = frames.first?.frame.sequence
        guard let w = supervisor.liveWorker() else { return (frames.map { _ in .dropped(supervisor.droppedReason) }, []) }
        lanes[i].lastStamp = frames.last?.stamp
        do {
            var messages: [WorkerMessage.FrameMessage] = []
            for (position, call) in frames.enumerated() {
                guard let message = try placed(call, position: position, lane: i, on: w) else {
                    let failed = supervisor.failed(w, .closed, "process", sequence)
                    return (frames.map { _ in failed }, [])
                }
                messages.append(message)
            }
            let message: WorkerMessage = messages.count == 1 ? .process(messages[0]) : .processBatch(messages)
            return (call(i, on: w, message, "process", sequence, answers: frames.map { ($0.stamp, $0.source) }), messages.map(\.frame))
        } catch {
            Log.error("\(error)", source: label)
            return (frames.map { _ in .dropped(supervisor.droppedReason) }, [])
        }
    }

    /// `call`'s frame (and full frame) where worker `w` reads it: its memory sent, or a copy made in
    /// the slots of its place in the batch. nil when the worker is gone.
    private func placed(_ call: FrameCall, position: Int, lane i: Int, on w: WorkerProcess) throws(PluginLoadError)
        -> WorkerMessage.FrameMessage? {
        var frame = call.frame
        let channel = w.channels[route(i).channel], transfer = lanes[i].transfer
        guard let (way, memory) = try transfer.prepare(&frame, pixels: call.pixels, channel: channel, generation: w.generation,
                                                       position: position)
        else { return nil }
        switch way {
        case .shared: sharedFrames.add(1, ordering: .relaxed)
        case .copied: copiedFrames.add(1, ordering: .relaxed)
        }
        var message = WorkerMessage.FrameMessage(memory: memory, frame: frame)
        if let regions = frame.regions, frame.region_count > 0 {
            message.regions = Array(UnsafeBufferPointer(start: regions, count: Int(frame.region_count)))
        }
        if let full = call.full, var fullFrame = frame.full?.pointee {
            guard let (_, fullMemory) = try transfer.prepare(&fullFrame, pixels: full, channel: channel, generation: w.generation,
                                                             slot: .full, position: position)
            else { return nil }
            message.full = .init(memory: fullMemory, frame: fullFrame)
        }
        return message
    }

    func ordered(lane i: Int, frame: inout cvhost_frame, pixels: PixelBuffer, stamp: HostServices.FrameStamp) -> PluginCallOutcome {
        let supervisor = route(i).supervisor
        guard let w = supervisor.liveWorker() else { return .dropped(supervisor.droppedReason) }
        lastOrdered.withLock { $0 = stamp }
        // process() prepared this frame: it is where it was (the runner holds `pixels`; nothing
        // else writes the slot). A worker restarted since then has not mapped it, and its
        // shared state never saw the frame's process(): the frame is lost to the restart.
        guard w.generation == lanes[i].transfer.generation else { return .dropped(.restarting) }
        return call(i, on: w, .ordered(.init(memory: lanes[i].transfer.lastMemory, frame: frame)), "ordered", frame.sequence, stamp)
    }

    func flush(lane i: Int) -> PluginCallOutcome {
        let supervisor = route(i).supervisor
        guard let w = supervisor.liveWorker() else { return .dropped(supervisor.droppedReason) }
        return call(i, on: w, .flush, "flush", nil, lanes[i].lastStamp)
    }

    func flushShared() -> PluginCallOutcome {
        let supervisor = route(0).supervisor
        guard let w = supervisor.liveWorker() else { return .dropped(supervisor.droppedReason) }
        return call(0, on: w, .sharedFlush, "shared_flush", nil, lastOrdered.withLock { $0 })
    }

    /// Destroys the instances in the worker and lets it end; kills it if destroy() hangs.
    func shutdown() { supervisors.forEach { $0.shutdown() } }

    var currentCalls: [PluginCall] { calls.withLock { $0.compactMap { $0 } } }

    var invalidResults: UInt64 { results.invalid.total }

    var isQuarantined: Bool { supervisors.allSatisfy(\.isQuarantined) }

    var workerMetrics: JSONObject? {
        var o = JSONObject()
        WorkerSupervisor.metrics(of: supervisors, into: &o)
        o.set("shared_frames", sharedFrames.load(ordering: .relaxed))
        o.set("copied_frames", copiedFrames.load(ordering: .relaxed))
        return o
    }

    /// One call on lane `i` answered once, its results of the frame `stamp`.
    private func call(_ i: Int, on w: WorkerProcess, _ message: WorkerMessage, _ callback: String, _ sequence: UInt64?,
                      _ stamp: HostServices.FrameStamp?) -> PluginCallOutcome {
        call(i, on: w, message, callback, sequence, answers: [(stamp, nil)])[0]
    }

    /// One call on lane `i`, answered once for each of `answers` (a frame, and the input its results
    /// name: nil, this instances' own), shown in `currentCalls` while it lasts; a failure is the
    /// supervisor's to handle.
    private func call(_ i: Int, on w: WorkerProcess, _ message: WorkerMessage, _ callback: String, _ sequence: UInt64?,
                      answers: [(stamp: HostServices.FrameStamp?, source: String?)]) -> [PluginCallOutcome] {
        let answers = answers.map { stamp, source in
            (stamp, source.map { WorkerCall.Results(source: $0, plugin: results.plugin, pluginIndex: results.pluginIndex,
                                                    invalid: results.invalid) } ?? results)
        }
        let (supervisor, c) = route(i)
        let since = HostClock.monotonicNs()
        calls.withLock { $0[i] = PluginCall(callback: callback, sequence: sequence, sinceNs: since) }
        defer { calls.withLock { $0[i] = nil } }
        let maxRSS = supervisor.limits.maxRSSBytes
        let overLimit: (() -> UInt64?)? = maxRSS == 0 ? nil : { w.residentBytes.flatMap { $0 > maxRSS ? $0 : nil } }
        let outcomes = WorkerCall.make(message, on: w.channels[c], timeoutMs: supervisor.limits.callTimeoutMs, startedNs: since,
                                       answers: answers, memoryOverLimit: overLimit)
        // The first failure is the supervisor's (it restarts the worker once); the frames after it share its outcome.
        var failed: PluginCallOutcome?
        let answered = outcomes.map { outcome -> PluginCallOutcome in
            switch outcome {
            case .done(let status, let lines):
                return .returned(status: status, lines: lines)
            case .failed(let failure):
                if failed == nil { failed = supervisor.failed(w, failure, callback, sequence) }
                return failed!
            }
        }
        if failed == nil { supervisor.checkMemory(w, sequence) }
        return answered
    }
}
