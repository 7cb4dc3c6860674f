import CVHostCore
import CVHostLines

/// What a run does with each frame's results before they are written, in frame order: the
/// analytics stage (CVHostRun's TrackedResults) gives results their track ids and writes its
/// events after them. A runner calls it for every frame its plugin processed, results or none.
public protocol FrameResultStage: AnyObject, Sendable {
    /// One frame's result lines; returns the lines to write, in order.
    func frame(_ lines: [OutputLine], _ frame: ProcessedFrame) -> [OutputLine]
    /// After the input's last frame: lines that close what is still open.
    func finish() -> [OutputLine]
    /// A frame the plugin will not be given (its frame-rate cap): told on the capture thread, in
    /// frame order, before any later frame's results come to `frame`.
    func passedOver(_ frame: ProcessedFrame)
}

extension FrameResultStage {
    public func passedOver(_ frame: ProcessedFrame) {}
}

/// A frame a plugin processed, as a result stage needs it.
public struct ProcessedFrame: Sendable {
    public let sequence: UInt64
    public let captureTimeNs: Int64
    public let presentationTimeNs: Int64
    /// The picture as captured (and turned): what results' bounds are in.
    public let width: Int
    public let height: Int

    init(_ sample: SampleBuffer, width: Int, height: Int) {
        sequence = sample.sequence
        captureTimeNs = sample.captureTimeNs
        presentationTimeNs = sample.presentationTimeNs
        self.width = width
        self.height = height
    }
}
