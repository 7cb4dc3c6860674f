/// What the host's motion detector (`--motion`) saw of a frame a tracker is given, and of the
/// frames since the one before: what lets the tracker keep what did not move (Tracker).
public struct MotionLook: Sendable, Equatable {
    /// Of the seconds since the frame before, those in which no motion was seen anywhere (frames
    /// a plugin gated on motion was not given, or passed over while all was still).
    public var stillSeconds: Double
    /// Where this frame moved, in the pixels its results' boxes are in (none: it was still).
    public var regions: [Box]

    public init(stillSeconds: Double, regions: [Box]) {
        self.stillSeconds = stillSeconds
        self.regions = regions
    }

    /// Whether motion touched `box` (a region overlaps it).
    func touches(_ box: Box) -> Bool { regions.contains { $0.iou(box) > 0 } }
}
