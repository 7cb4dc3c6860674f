/// The ground under a zone, measured: the real lengths of a four-cornered zone's sides map the
/// picture's pixels to metres (or feet) on the ground, through the perspective in which a camera
/// sees flat ground (a homography), as Frigate's zone speed estimation takes `distances` and
/// OpenCV's getPerspectiveTransform makes the map. A track's speed is its way on the ground over time.
///
/// It holds for points on the ground (a box's bottom centre, the default anchor) of a ground that
/// is flat within the zone; a box's jitter moves its point by as much on the ground as in the
/// picture, so speeds are better the longer a track's way through the zone.
public struct GroundPlane: Equatable, Sendable {
    /// What speeds are said in, and what the distances are in: metres for km/h and m/s, feet for mph.
    public enum SpeedUnit: String, Sendable, CaseIterable {
        case kmh = "km/h", mph, mps = "m/s"

        /// A speed in distance units a second, in this unit.
        func perSecond(_ v: Double) -> Double {
            switch self {
            case .kmh: v * 3.6
            case .mph: v * 3600 / 5280
            case .mps: v
            }
        }
    }

    /// Picture to ground, row by row (the last entry 1).
    private let h: [Double]

    /// - Parameters:
    ///   - corners: the zone's four points, in order around it (pixels).
    ///   - sides: the real length of each side from each corner to the next (the last back to the first).
    /// - Returns: nil when the four points cannot be a view of a rectangle on the ground (three in
    ///   a line, or a side of no length).
    public init?(corners: [Point], sides: [Double]) {
        guard corners.count == 4, sides.count == 4, sides.allSatisfy({ $0 > 0 && $0.isFinite }) else { return nil }
        // The ground rectangle: opposite sides averaged (a user's tape measure is not exact).
        let width = (sides[0] + sides[2]) / 2, length = (sides[1] + sides[3]) / 2
        self.init(from: corners, to: [Point(0, 0), Point(width, 0), Point(width, length), Point(0, length)])
    }

    /// The map that takes each of four points to its counterpart (OpenCV's getPerspectiveTransform);
    /// nil when three of either four are in a line, or `from` is seen across the horizon.
    init?(from: [Point], to: [Point]) {
        guard from.count == 4, to.count == 4 else { return nil }
        // u = (h0 x + h1 y + h2) / (h6 x + h7 y + 1), v = (h3 x + h4 y + h5) / (...): eight equations.
        var a: [[Double]] = []
        for (p, g) in zip(from, to) {
            a.append([p.x, p.y, 1, 0, 0, 0, -g.x * p.x, -g.x * p.y, g.x])
            a.append([0, 0, 0, p.x, p.y, 1, -g.y * p.x, -g.y * p.y, g.y])
        }
        guard let solution = Self.solve(&a) else { return nil }
        // Scaled so that the points' side of the horizon is positive (the picture's own corner,
        // where h8 = 1 puts the sign, may be sky above it).
        let w = solution[6] * from[0].x + solution[7] * from[0].y + 1
        h = (solution + [1]).map { w < 0 ? -$0 : $0 }
        // Every point lands where it should, none across the horizon.
        let size = to.map { max(abs($0.x), abs($0.y)) }.max() ?? 1
        for (p, g) in zip(from, to) {
            guard let m = ground(p), m.distance(to: g) <= 1e-6 * max(size, 1) else { return nil }
        }
    }

    /// Where a point of the picture is on the ground; nil beyond the horizon.
    func ground(_ p: Point) -> Point? {
        let w = h[6] * p.x + h[7] * p.y + h[8]
        guard w > 1e-12 else { return nil }
        return Point((h[0] * p.x + h[1] * p.y + h[2]) / w, (h[3] * p.x + h[4] * p.y + h[5]) / w)
    }

    /// Gaussian elimination with partial pivoting of an n x (n+1) system; nil when it is singular.
    private static func solve(_ a: inout [[Double]]) -> [Double]? {
        let n = a.count
        let scale = a.joined().map(abs).max() ?? 1
        for col in 0..<n {
            guard let pivot = (col..<n).max(by: { abs(a[$0][col]) < abs(a[$1][col]) }), abs(a[pivot][col]) > 1e-12 * scale else { return nil }
            a.swapAt(col, pivot)
            for row in 0..<n where row != col {
                let f = a[row][col] / a[col][col]
                if f != 0 { for k in col...n { a[row][k] -= f * a[col][k] } }
            }
        }
        return (0..<n).map { a[$0][n] / a[$0][$0] }
    }
}
