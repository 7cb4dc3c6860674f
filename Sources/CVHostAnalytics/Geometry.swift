/// Points, boxes, polygons and segments in a frame's pixels (x to the right, y down), as the
/// analytics stage reads boxes from results and zones and lines from its settings.
public struct Point: Equatable, Sendable, CustomStringConvertible {
    public var x: Double
    public var y: Double

    public init(_ x: Double, _ y: Double) {
        self.x = x
        self.y = y
    }

    public var description: String { "\(Self.text(x)),\(Self.text(y))" }

    static func text(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e9 ? String(Int(v)) : String(v) }

    static func - (a: Point, b: Point) -> Point { Point(a.x - b.x, a.y - b.y) }

    /// A point given in fractions of a frame, in that frame's pixels.
    func scaled(_ width: Int, _ height: Int) -> Point { Point(x * Double(width), y * Double(height)) }

    /// The z of the cross product of a and b: > 0 when b turns left of a (y down: clockwise on screen).
    static func cross(_ a: Point, _ b: Point) -> Double { a.x * b.y - a.y * b.x }

    func distance(to p: Point) -> Double { ((x - p.x) * (x - p.x) + (y - p.y) * (y - p.y)).squareRoot() }
}

/// A result's box: `bounds` {x, y, width, height} in pixels.
public struct Box: Equatable, Sendable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// The box `f` of the way (0...1) from this one to `other`, each side moved evenly.
    public func interpolated(to other: Box, _ f: Double) -> Box {
        Box(x: x + (other.x - x) * f, y: y + (other.y - y) * f, width: width + (other.width - width) * f,
            height: height + (other.height - height) * f)
    }

    var maxX: Double { x + width }
    var maxY: Double { y + height }
    var area: Double { max(0, width) * max(0, height) }

    /// Intersection over union: 0 for boxes that do not overlap, 1 for the same box.
    func iou(_ o: Box) -> Double {
        let w = min(maxX, o.maxX) - max(x, o.x), h = min(maxY, o.maxY) - max(y, o.y)
        guard w > 0, h > 0 else { return 0 }
        let inter = w * h
        return inter / (area + o.area - inter)
    }

    /// The point of the box that stands for where the object is (Anchor).
    func point(_ anchor: Anchor) -> Point {
        switch anchor {
        case .bottomCenter: Point(x + width / 2, maxY)
        case .center: Point(x + width / 2, y + height / 2)
        case .topCenter: Point(x + width / 2, y)
        case .bottomLeft: Point(x, maxY)
        case .bottomRight: Point(maxX, maxY)
        }
    }
}

/// Which point of a box zones and lines test: the bottom centre by default (where a person or a
/// vehicle touches the ground, as DeepStream's nvdsanalytics takes it).
public enum Anchor: String, CaseIterable, Sendable {
    case bottomCenter = "bottom_center", center, topCenter = "top_center", bottomLeft = "bottom_left", bottomRight = "bottom_right"
}

/// A closed polygon (a zone's outline).
public struct Polygon: Equatable, Sendable {
    public let points: [Point]
    /// The box around the points: a point outside it is outside at once (most tracks, most frames).
    private let bounds: (min: Point, max: Point)

    /// The most points a zone may have: its outline is checked in time that grows with their
    /// square, and every track is tested against its edges on every frame.
    public static let mostPoints = 1000

    public init(_ points: [Point]) {
        self.points = points
        bounds = (Point(points.map(\.x).min() ?? 0, points.map(\.y).min() ?? 0), Point(points.map(\.x).max() ?? 0, points.map(\.y).max() ?? 0))
    }

    public static func == (a: Polygon, b: Polygon) -> Bool { a.points == b.points }

    /// What is wrong with `points` as a zone's outline, or nil: fewer than 3 points or more than
    /// `mostPoints`, no area, edges that cross.
    public static func problem(_ points: [Point]) -> String? {
        guard points.count >= 3 else { return "a zone needs at least 3 points, it has \(points.count)" }
        guard points.count <= mostPoints else { return "a zone has at most \(mostPoints) points, this one \(points.count)" }
        let n = points.count
        for i in 0..<n {
            for j in (i + 1)..<n {
                // Neighbouring edges share a point; every other pair must not meet.
                if j == i + 1 || (i == 0 && j == n - 1) { continue }
                if Segment(points[i], points[(i + 1) % n]).crosses(Segment(points[j], points[(j + 1) % n])) {
                    return "its edges cross (edge \(i + 1)-\(i + 2) and edge \(j + 1)-\((j + 1) % n + 1)): give the points in order around the zone"
                }
            }
        }
        var twiceArea = 0.0
        for i in 0..<n { twiceArea += Point.cross(points[i], points[(i + 1) % n]) }
        guard abs(twiceArea) > 1e-9 else { return "its points enclose no area (they lie on one line)" }
        return nil
    }

    /// The smaller of the width and the height of the box around the points.
    var narrowerSide: Double { min(bounds.max.x - bounds.min.x, bounds.max.y - bounds.min.y) }

    /// The distance from `p` to the nearest edge.
    func distanceToOutline(_ p: Point) -> Double {
        var nearest = Double.infinity
        var j = points.count - 1
        for i in points.indices {
            nearest = min(nearest, Segment(points[j], points[i]).distance(to: p))
            j = i
        }
        return nearest
    }

    /// Whether `p` lies inside (even-odd rule; a point on an edge counts as inside).
    func contains(_ p: Point) -> Bool {
        let slack = 1e-9
        guard p.x >= bounds.min.x - slack, p.x <= bounds.max.x + slack, p.y >= bounds.min.y - slack, p.y <= bounds.max.y + slack else { return false }
        var inside = false
        var j = points.count - 1
        for i in 0..<points.count {
            let a = points[i], b = points[j]
            if Segment(a, b).distance(to: p) < 1e-9 { return true }
            if (a.y > p.y) != (b.y > p.y), p.x < (b.x - a.x) * (p.y - a.y) / (b.y - a.y) + a.x { inside.toggle() }
            j = i
        }
        return inside
    }
}

/// A segment from `a` to `b` (a counting line, a polygon's edge, a track's step).
public struct Segment: Equatable, Sendable {
    public let a: Point
    public let b: Point

    public init(_ a: Point, _ b: Point) {
        self.a = a
        self.b = b
    }

    var length: Double { a.distance(to: b) }

    /// Which side of the line through a and b `p` is on: > 0 left of a→b as seen on screen (y
    /// down), < 0 right, 0 on it; its magnitude is the distance from the line.
    func side(_ p: Point) -> Double {
        let d = b - a
        return -Point.cross(d, p - a) / max(length, 1e-12)
    }

    /// Whether the two segments meet (touching counts).
    func crosses(_ o: Segment) -> Bool {
        func orient(_ p: Point, _ q: Point, _ r: Point) -> Double { Point.cross(q - p, r - p) }
        func within(_ p: Point, _ q: Point, _ r: Point) -> Bool {
            min(p.x, r.x) - 1e-9 <= q.x && q.x <= max(p.x, r.x) + 1e-9 && min(p.y, r.y) - 1e-9 <= q.y && q.y <= max(p.y, r.y) + 1e-9
        }
        let d1 = orient(o.a, o.b, a), d2 = orient(o.a, o.b, b), d3 = orient(a, b, o.a), d4 = orient(a, b, o.b)
        if ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)) { return true }
        if abs(d1) < 1e-12 && within(o.a, a, o.b) { return true }
        if abs(d2) < 1e-12 && within(o.a, b, o.b) { return true }
        if abs(d3) < 1e-12 && within(a, o.a, b) { return true }
        if abs(d4) < 1e-12 && within(a, o.b, b) { return true }
        return false
    }

    /// The distance from `p` to the nearest point of the segment.
    func distance(to p: Point) -> Double {
        let d = b - a, len2 = d.x * d.x + d.y * d.y
        guard len2 > 0 else { return a.distance(to: p) }
        let t = min(1, max(0, ((p.x - a.x) * d.x + (p.y - a.y) * d.y) / len2))
        return Point(a.x + t * d.x, a.y + t * d.y).distance(to: p)
    }
}
