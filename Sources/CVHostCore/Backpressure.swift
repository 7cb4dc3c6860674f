/// What an output does when its consumer is busy and its queue is full.
public enum BackpressurePolicy: String, Sendable, CaseIterable {
    /// Drop the oldest waiting frame for the newer one and count the drop (live sources'
    /// default; AVCaptureVideoDataOutput.alwaysDiscardsLateVideoFrames = true). A slow consumer
    /// never slows the source or other consumers.
    case dropLate = "drop-late"
    /// Make the source wait until there is room: nothing is lost (files' and images' default).
    case block
}

/// Why a frame offered to an output did not reach its consumer.
public enum DropReason: String, Sendable, CaseIterable {
    /// The queue was full in drop-late mode and a newer frame took this one's place.
    case late
    /// The connection's frame-rate cap (videoMinFrameDuration) skipped it.
    case frameRateCap = "frame_rate_cap"
    /// Delivered while the consumer was being restarted after a crash (a plugin's worker process).
    case restarting
    /// Delivered after the consumer was given up on (a plugin quarantined after repeated crashes).
    case quarantined
    /// Nothing moved in it, and the output is offered only frames that move (MotionGate).
    case noMotion = "no_motion"
}

/// Where a delivered frame came from within an output with several workers.
public struct DeliveryContext: Sendable {
    /// Which worker thread runs the delegate call, 0..<workerCount.
    public let worker: Int
    /// The frame's place in dequeue order, 0, 1, 2, ... without gaps: consumers with several
    /// workers re-order their results by it.
    public let ticket: UInt64
}
