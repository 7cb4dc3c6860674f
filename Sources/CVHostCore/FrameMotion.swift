/// What moved in a frame, as its session's analyzer saw it before any output was offered the frame
/// (`--motion`): the frame carries it, so that an output gated on motion (`MotionGate`) decides on
/// the frame's own motion, the same on every run of a file.
public struct FrameMotion: Sendable, Equatable {
    /// A region that moved, in the frame's pixels.
    public struct Region: Sendable, Equatable {
        public let x: Int, y: Int, width: Int, height: Int
        public init(x: Int, y: Int, width: Int, height: Int) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

    /// Motion runs: this frame moved, or one did less than the analyzer's hold before it.
    public let active: Bool
    /// Where this frame moved (empty when it did not, `active` or not).
    public let regions: [Region]

    public init(active: Bool, regions: [Region]) {
        self.active = active
        self.regions = regions
    }
}

/// Sees every frame of a session on its capture thread, before the outputs are offered it, and
/// says what moved in it. Set before the session starts.
public protocol SampleAnalyzer: AnyObject, Sendable {
    func analyze(_ sample: SampleBuffer) -> FrameMotion
    /// The session's frames have ended (its last was analyzed).
    func sessionEnded()
}

/// An output offered frames only while they move (a plugin's `on_motion=true`): a frame without
/// motion is dropped (`no_motion`) unless `refresh` seconds of media time passed since the last one
/// let through. Frames of a session with no analyzer are all let through.
public struct MotionGate: Sendable, Equatable {
    /// Seconds after which a still frame is let through anyway; nil: never.
    public let refresh: Double?

    public init(refresh: Double?) {
        self.refresh = refresh
    }
}
