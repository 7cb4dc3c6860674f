import CVHostCore
import CVHostLines
import CVHostPluginABI

/// The instances of one `--plugin` on one input, wherever they run: in cvhost's process
/// (InProcessInstances) or in a worker process (isolation=process); or those of one `--plugin`
/// shared by every input (SharedInstances). Lane i is instance i: the runner calls it only from
/// the video data output's delivery worker i's thread, so each instance sees one call at a time.
protocol PluginInstances: AnyObject, Sendable {
    var count: Int { get }
    /// True when the instances run in a worker process (isolation=process).
    var isolated: Bool { get }
    /// The frames the instances asked for in create() (request_frames), the same for all.
    var frameRequest: FrameRequest? { get }
    /// Calls process() on one frame: `frame` is `pixels` as C sees it (pixels outlives the call);
    /// its `full`, when set, is `full` as C sees it (the captured frame the plugin asked for too);
    /// `source`: the input the frame is of, which its results name.
    func process(lane: Int, frame: inout cvhost_frame, pixels: PixelBuffer, full: PixelBuffer?,
                 stamp: HostServices.FrameStamp, source: String) -> PluginCallOutcome
    /// Calls process on several frames (of several inputs) at once where the plugin takes them
    /// together (PluginInfo.takesBatches), else one by one; an outcome for each, in their order.
    func processBatch(lane: Int, _ calls: [FrameCall]) -> [PluginCallOutcome]
    /// Calls ordered() (the ordered stage) for the frame `lane` just processed; the runner
    /// makes these calls one at a time, in frame order.
    func ordered(lane: Int, frame: inout cvhost_frame, pixels: PixelBuffer, stamp: HostServices.FrameStamp) -> PluginCallOutcome
    /// Calls flush() (if the plugin has one) after the lane's last frame.
    func flush(lane: Int) -> PluginCallOutcome
    /// Calls shared_flush() (if the plugin has one) after every lane's flush.
    func flushShared() -> PluginCallOutcome
    /// Destroys every instance. Once, after the session stopped.
    func shutdown()
    /// The calls in progress now.
    var currentCalls: [PluginCall] { get }
    /// Results refused so far (invalid, or emitted outside a call).
    var invalidResults: UInt64 { get }
    /// The worker process's part of the metrics line (nil in cvhost's process).
    var workerMetrics: JSONObject? { get }
    /// The plugin was given up on after repeated crashes (isolation=process).
    var isQuarantined: Bool { get }
}

/// One frame for process(), as processBatch takes it: its owner waits for its outcome, so the
/// frame's pointers (its pixels, its full frame) stay valid while it is used.
struct FrameCall {
    var frame: cvhost_frame
    let pixels: PixelBuffer
    let full: PixelBuffer?
    let stamp: HostServices.FrameStamp
    let source: String
}

extension PluginInstances {
    /// One frame a call, in turn (a plugin that takes no batches, or in cvhost's process).
    func processBatch(lane: Int, _ calls: [FrameCall]) -> [PluginCallOutcome] {
        calls.map { c in
            var f = c.frame
            return process(lane: lane, frame: &f, pixels: c.pixels, full: c.full, stamp: c.stamp, source: c.source)
        }
    }
}

/// A plugin's instances where its configuration says they run: in cvhost's process, or in worker
/// processes (whose events, plugin.crashed..., go to `report`). `source`: the input whose lines
/// they write (nil: shared by every input).
func makeInstances(plugin: PluginInfo, configuration c: PluginConfiguration, source: String?, index: Int, label: String,
                   report: @escaping @Sendable (JSONObject) -> Void) throws -> PluginInstances {
    switch c.isolation {
    case .none:
        return try InProcessInstances(plugin: plugin, configuration: c, source: source, index: index, label: label)
    case .process:
        return try IsolatedInstances(
            plugin: plugin, configuration: c, source: source, index: index, label: label,
            limits: .init(callTimeoutMs: c.timeoutMs, startTimeoutMs: 6 * c.timeoutMs, maxRSSBytes: UInt64(c.maxRSSMB) * 1_048_576),
            report: report)
    }
}

/// What became of a call into a plugin.
enum PluginCallOutcome {
    /// It returned `status` (0 or a negative errno), having emitted `lines`.
    case returned(status: Int32, lines: [OutputLine])
    /// It was not made, or its frame is lost: the plugin was not there to take it.
    case dropped(DropReason)
    /// The plugin's worker process crashed (or was killed, hung) during the call: the frame failed.
    case crashed

    /// The call was made and returned 0.
    var succeeded: Bool {
        if case .returned(0, _) = self { true } else { false }
    }
}

/// A call into a plugin: which callback, for which frame, since when (monotonic ns).
public struct PluginCall: Sendable {
    public let callback: String
    public let sequence: UInt64?
    public let sinceNs: UInt64
}
