import CVHostCore
import CVHostLines
import CVHostPluginABI

/// One plugin's instances serving every input of a run (`share`, by default for a plugin that
/// keeps no state between frames): one model loaded once, not once per input. Each input keeps its
/// own runner (its delivery queue and back-pressure, its metrics, its results in frame order); its
/// frames take turns on the instances (`FairLanes`: whoever asked first is served first, so an
/// input with frames waiting never keeps another waiting longer than one call on each instance),
/// and each call's results carry the input that asked.
///
/// A plugin shared so has no ordered stage and no flush (`canShare`): those belong to one input's
/// frames in order.
public final class SharedInstances: Sendable {
    let instances: any PluginInstances
    public let configuration: PluginConfiguration
    private let lanes: FairLanes

    /// Whether `plugin`'s instances can serve several inputs: it keeps no state between frames, and
    /// has neither an ordered stage nor a flush (whose calls follow one input's frames).
    public static func canShare(_ plugin: PluginInfo) -> Bool {
        plugin.isStateless && !plugin.hasOrderedStage && !plugin.hasFlush
    }

    /// Creates the plugin's instances (in cvhost's process or in workers, as its configuration says).
    /// - Parameters: index: its --plugin's position; label: how messages name it;
    ///   report: where its workers' events go (plugin.crashed...: lines of no input).
    /// - Throws: `PluginLoadError`, as a runner's own instances would.
    public init(plugin: PluginInfo, configuration: PluginConfiguration, index: Int, label: String,
                report: @escaping @Sendable (JSONObject) -> Void) throws {
        self.configuration = configuration
        instances = try makeInstances(plugin: plugin, configuration: configuration, source: nil, index: index, label: label, report: report)
        lanes = FairLanes(count: instances.count)
    }

    /// Instances for one input's runner: the shared ones, taken in turn.
    func lane() -> PluginInstances { SharedLane(self) }

    /// Destroys every instance. Once, after every input using them has stopped.
    public func shutdown() { instances.shutdown() }

    /// Runs `body` on a free instance (waiting for one, in the order asked).
    fileprivate func onLane<T>(_ body: (Int) -> T) -> T {
        let lane = lanes.take()
        defer { lanes.give(lane) }
        return body(lane)
    }
}

/// One input's view of the shared instances: process() on whichever instance is free.
private final class SharedLane: PluginInstances, Sendable {
    private let pool: SharedInstances

    init(_ pool: SharedInstances) { self.pool = pool }

    var count: Int { pool.instances.count }
    var isolated: Bool { pool.instances.isolated }
    var frameRequest: FrameRequest? { pool.instances.frameRequest }

    func process(lane _: Int, frame: inout cvhost_frame, pixels: PixelBuffer, full: PixelBuffer?, stamp: HostServices.FrameStamp,
                 source: String) -> PluginCallOutcome {
        var f = frame
        let outcome = pool.onLane { lane in pool.instances.process(lane: lane, frame: &f, pixels: pixels, full: full, stamp: stamp, source: source) }
        frame = f
        return outcome
    }

    // A shared plugin has neither (SharedInstances.canShare).
    func ordered(lane: Int, frame: inout cvhost_frame, pixels: PixelBuffer, stamp: HostServices.FrameStamp) -> PluginCallOutcome {
        .returned(status: 0, lines: [])
    }

    func flush(lane: Int) -> PluginCallOutcome { .returned(status: 0, lines: []) }

    func flushShared() -> PluginCallOutcome { .returned(status: 0, lines: []) }

    /// The pool outlives an input's runner: it is shut down by its owner when the run ends.
    func shutdown() {}

    var currentCalls: [PluginCall] { pool.instances.currentCalls }
    var invalidResults: UInt64 { pool.instances.invalidResults }
    var workerMetrics: JSONObject? { pool.instances.workerMetrics }
    var isQuarantined: Bool { pool.instances.isQuarantined }
}

/// Instances handed out one caller at a time, in the order they were asked for.
final class FairLanes: @unchecked Sendable {
    // @unchecked Sendable: every field is touched with `lock` held.
    private let lock = ConditionLock()
    private var free: [Int]
    /// Callers waiting, first come first served: each finds the lane given to it in `granted`.
    private var waiting: [Int] = []
    private var granted: [Int: Int] = [:]
    private var next = 0

    init(count: Int) {
        free = Array((0..<count).reversed())
    }

    /// A free lane: at once, or when the callers that asked before have had theirs.
    func take() -> Int {
        lock.withLock {
            if waiting.isEmpty, let lane = free.popLast() { return lane }
            let me = next
            next += 1
            waiting.append(me)
            while granted[me] == nil { lock.wait() }
            return granted.removeValue(forKey: me)!
        }
    }

    /// Gives `lane` back: to the caller waiting longest, if any.
    func give(_ lane: Int) {
        lock.withLock {
            if waiting.isEmpty {
                free.append(lane)
            } else {
                granted[waiting.removeFirst()] = lane
                lock.broadcast()
            }
        }
    }
}
