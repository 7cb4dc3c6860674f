/// A part of the picture where boxes are ignored (a tree that moves, a road beyond the fence, a
/// screen): a box whose anchor (`anchor`, the bottom centre by default: where it stands) is
/// inside is never tracked, and is counted (`filtered_results`, reason `mask`).
///
///     --mask NAME=X,Y X,Y X,Y ...[:anchor=bottom_center,input=ID,units=auto]
public struct BoxMask: Equatable, Sendable {
    public let name: String
    public var polygon: Polygon
    public var anchor = Anchor.bottomCenter
    public var input: String?
    /// Its points are fractions of the frame's width and height (0..1), not pixels.
    public var fractions = false

    public static let reason = "mask"

    public init(name: String, polygon: Polygon) {
        self.name = name
        self.polygon = polygon
    }

    /// Whether `box`'s anchor is inside, on a frame of `width` x `height`.
    func covers(_ box: Box, width: Int, height: Int) -> Bool { contains(box.point(anchor), width: width, height: height) }

    /// Whether the point `p` (the frame's pixels) is inside, on a frame of `width` x `height`:
    /// also where motion is not looked for (MotionDetector).
    public func contains(_ p: Point, width: Int, height: Int) -> Bool {
        guard fractions else { return polygon.contains(p) }
        return polygon.contains(Point(p.x / Double(max(1, width)), p.y / Double(max(1, height))))
    }
}
