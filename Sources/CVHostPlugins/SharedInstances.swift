import CVHostCore
import CVHostLines
import CVHostPluginABI

/// One plugin's instances serving every input of a run (`share`, by default for a plugin that
/// keeps no state between frames): one model loaded once, not once per input. Each input keeps its
/// own runner (its delivery queue and back-pressure, its metrics, its results in frame order); its
/// frames take turns on the instances (`FrameBatches`: whoever asked first is served first, so an
/// input with frames waiting never keeps another waiting longer than the calls queued before it),
/// frames waiting together go in one call to a plugin that takes batches (`batch`, `batch_wait_ms`:
/// a model run once for the frames of several cameras), and each result carries the input that asked.
///
/// A plugin shared so has no ordered stage and no flush (`canShare`): those belong to one input's
/// frames in order.
public final class SharedInstances: Sendable {
    let instances: any PluginInstances
    public let configuration: PluginConfiguration
    private let batches: FrameBatches<FrameCall, PluginCallOutcome>

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
        batches = FrameBatches(lanes: instances.count, batchSize: configuration.batch, waitMs: configuration.batchWaitMs)
    }

    /// Instances for one input's runner: the shared ones, taken in turn.
    func lane() -> PluginInstances { SharedLane(self) }

    /// Destroys every instance. Once, after every input using them has stopped.
    public func shutdown() { instances.shutdown() }

    /// `call`'s outcome, on a free instance (waiting for one, in the order asked), alone or in a
    /// batch with the calls of other inputs waiting beside it.
    fileprivate func process(_ call: FrameCall) -> PluginCallOutcome {
        batches.run(call) { calls, lane in instances.processBatch(lane: lane, calls) }
    }

    /// The calls made into the instances by every input, and the frames they carried.
    fileprivate var counts: (calls: UInt64, items: UInt64) { batches.counts }
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
        pool.process(FrameCall(frame: frame, pixels: pixels, full: full, stamp: stamp, source: source))
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
    var workerMetrics: JSONObject? {
        guard var o = pool.instances.workerMetrics else { return nil }
        let (calls, frames) = pool.counts
        o.set("batch_calls", calls)
        o.set("batch_frames", frames)
        return o
    }
    var isQuarantined: Bool { pool.instances.isQuarantined }
}
