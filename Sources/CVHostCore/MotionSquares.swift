/// A frame's motion as the regions a detector gated on motion looks at (ABI 2.4's
/// cvhost_frame.regions): its motion boxes gathered into squares of the detector's input size, as
/// Frigate gathers them (frigate/video.py's get_cluster_region), so that a detector runs on a few
/// crops at its own scale instead of on the whole picture shrunk to it.
extension FrameMotion {
    /// The most regions a frame is given: more, and the whole frame costs less.
    public static let mostSquares = 4
    /// The share of the picture the regions may cover: more, and the whole frame is as cheap.
    public static let mostSquaresShare = 0.5

    /// Its regions gathered into squares of `side` pixels in a `width` x `height` picture: boxes
    /// whose bounds together fit in a square of that side share one (largest first); each group's
    /// square is centred on its bounds, as large as they where they are larger, moved inside the
    /// picture (and no larger than it). Empty when the frame did not move, or when the squares would
    /// be more than `mostSquares` or cover more than `mostSquaresShare` of the picture: the whole
    /// frame is looked at then.
    public func squares(side: Int, width: Int, height: Int) -> [Region] {
        guard active, !regions.isEmpty, width > 0, height > 0 else { return [] }
        var groups: [(x0: Int, y0: Int, x1: Int, y1: Int)] = []
        for r in regions.sorted(by: { $0.width * $0.height > $1.width * $1.height }) {
            let (x0, y0, x1, y1) = (r.x, r.y, r.x + r.width, r.y + r.height)
            if let i = groups.firstIndex(where: { g in max(g.x1, x1) - min(g.x0, x0) <= side && max(g.y1, y1) - min(g.y0, y0) <= side }) {
                groups[i] = (min(groups[i].x0, x0), min(groups[i].y0, y0), max(groups[i].x1, x1), max(groups[i].y1, y1))
            } else {
                groups.append((x0, y0, x1, y1))
            }
        }
        guard groups.count <= Self.mostSquares else { return [] }
        let squares = groups.map { g -> Region in
            let s = max(side, g.x1 - g.x0, g.y1 - g.y0)
            let w = min(s, width), h = min(s, height)
            let x = min(max(0, (g.x0 + g.x1 - w) / 2), width - w), y = min(max(0, (g.y0 + g.y1 - h) / 2), height - h)
            return Region(x: x, y: y, width: w, height: h)
        }
        let covered = squares.reduce(0) { $0 + $1.width * $1.height }
        return Double(covered) > Self.mostSquaresShare * Double(width * height) ? [] : squares
    }
}
