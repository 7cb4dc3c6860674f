/// One captured frame as the session hands it to outputs: the pixels and when they were taken
/// (the role of CMSampleBuffer).
public struct SampleBuffer: Sendable {
    /// Frame number from the start of the session, 0-based. Gaps downstream mean drops.
    public let sequence: UInt64
    /// When the frame was captured, in nanoseconds since the Unix epoch.
    public let captureTimeNs: Int64
    /// When the frame was captured on the monotonic clock (for latency measurements).
    public let monotonicCaptureNs: UInt64
    /// Media time from the start of the source, in nanoseconds (a file's own timestamps).
    public let presentationTimeNs: Int64
    public let pixelBuffer: PixelBuffer
    /// The image file the frame came from, for inputs of still images (a result line's `image`).
    public let imagePath: String?
    /// The frame has nothing to do with the one before (a still image of a list).
    public let isIndependent: Bool
    /// What moved in it, when its session looks (`--motion`); set before outputs are offered it.
    public internal(set) var motion: FrameMotion?

    public init(sequence: UInt64, captureTimeNs: Int64, monotonicCaptureNs: UInt64, presentationTimeNs: Int64,
                pixelBuffer: PixelBuffer, imagePath: String? = nil, isIndependent: Bool = false) {
        self.imagePath = imagePath
        self.isIndependent = isIndependent
        self.sequence = sequence
        self.captureTimeNs = captureTimeNs
        self.monotonicCaptureNs = monotonicCaptureNs
        self.presentationTimeNs = presentationTimeNs
        self.pixelBuffer = pixelBuffer
    }
}

/// A frame as a device produces it, before the session numbers it.
public struct CapturedFrame: Sendable {
    public let pixelBuffer: PixelBuffer
    /// Media time from the start of the source, in nanoseconds.
    public let presentationTimeNs: Int64
    /// Capture time on the wall clock, ns since the epoch; nil lets the session stamp it on arrival.
    public let captureTimeNs: Int64?
    /// Frames the device knows it lost just before this one (driver sequence gaps).
    public let framesLostBefore: UInt64
    /// Frames the source dropped just before this one because they were damaged (the driver
    /// flagged an error, or delivered fewer bytes than the format needs).
    public let corruptBefore: UInt64
    /// When the frame was captured on CLOCK_MONOTONIC (the driver's timestamp); nil: on arrival.
    public let monotonicCaptureNs: UInt64?
    /// The image file the frame came from, for inputs of still images.
    public let imagePath: String?
    /// The frame has nothing to do with the one before (a still image of a list).
    public let isIndependent: Bool

    public init(pixelBuffer: PixelBuffer, presentationTimeNs: Int64, captureTimeNs: Int64? = nil,
                framesLostBefore: UInt64 = 0, corruptBefore: UInt64 = 0, monotonicCaptureNs: UInt64? = nil,
                imagePath: String? = nil, isIndependent: Bool = false) {
        self.corruptBefore = corruptBefore
        self.monotonicCaptureNs = monotonicCaptureNs
        self.imagePath = imagePath
        self.isIndependent = isIndependent
        self.pixelBuffer = pixelBuffer
        self.presentationTimeNs = presentationTimeNs
        self.captureTimeNs = captureTimeNs
        self.framesLostBefore = framesLostBefore
    }
}
