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

    /// The regions in the picture `orientation` makes of a `width` x `height` capture (mirrored left
    /// to right, then turned clockwise): where a plugin's results' boxes are.
    public func turned(_ orientation: VideoOrientation, width: Int, height: Int) -> FrameMotion {
        guard !orientation.isIdentity else { return self }
        return FrameMotion(active: active, regions: regions.map { r in
            let x = orientation.isMirrored ? width - r.x - r.width : r.x
            switch orientation.rotationAngle {
            case 90: return Region(x: height - r.y - r.height, y: x, width: r.height, height: r.width)
            case 180: return Region(x: width - x - r.width, y: height - r.y - r.height, width: r.width, height: r.height)
            case 270: return Region(x: r.y, y: width - x - r.width, width: r.height, height: r.width)
            default: return Region(x: x, y: r.y, width: r.width, height: r.height)
            }
        })
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
