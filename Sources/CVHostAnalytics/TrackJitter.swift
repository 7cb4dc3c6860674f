/// How much a track's boxes jitter, measured from the boxes the detector gave it: what a zone's or
/// a line's band needs to be wider than. Each new box's edges are compared with where the two
/// boxes before it lead (a straight line through them, at their times): an object moving steadily
/// shows only the detector's noise there, and the steps where it starts, stops or turns are a few
/// among many, which the median leaves out. Until `fewest` such comparisons, nothing is known.
struct TrackJitter: Sendable {
    /// The last boxes' edges (left, top, right, bottom) and times.
    private var last: (edges: [Double], time: Double)?
    private var beforeLast: (edges: [Double], time: Double)?
    /// The newest deviations, each scaled to one box's noise, at most `kept`; oldest first.
    private var deviations: [Double] = []
    static let kept = 24
    static let fewest = 4

    /// A box seen at `time` (later than the one before; a box at the same time is ignored).
    mutating func see(_ box: Box, time: Double) {
        let edges = [box.x, box.y, box.x + box.width, box.y + box.height]
        if let b = last, time <= b.time { return }
        if let b = last, let a = beforeLast {
            // Where a and b lead at `time`: b + r (b - a), r the ratio of the steps. With noise of
            // one deviation σ on each box, the difference has 1 + (1 + r)² + r² times its variance.
            let r = (time - b.time) / (b.time - a.time)
            let scale = (1 + (1 + r) * (1 + r) + r * r).squareRoot()
            for i in 0..<4 { deviations.append(abs(edges[i] - (b.edges[i] + r * (b.edges[i] - a.edges[i]))) / scale) }
            if deviations.count > Self.kept * 4 { deviations.removeFirst(deviations.count - Self.kept * 4) }
            if deviations.count >= Self.fewest * 4 {
                // For normal noise, the median of |x| is 0.6745 σ.
                deviation = deviations.sorted()[deviations.count / 2] / 0.6745
            }
        }
        beforeLast = last
        last = (edges, time)
    }

    /// One edge's noise (a standard deviation, pixels) from the median deviation; nil until `fewest`
    /// boxes have been compared. Worked out once a box (zones and lines ask for it many times a frame).
    private(set) var deviation: Double?

    /// The band a track must be past, on either side of a line or a zone's outline, to be on that
    /// side: `bandWidths` deviations of its boxes' jitter (`deviation`: its own, or the detector's
    /// usual for a box of its height while its own is not known), never less than `leastBand` of its
    /// box's `height` (a detector whose boxes never jitter still wobbles by a pixel or two on a real
    /// picture), never more than `most` (the line's or zone's default share of the height: what the
    /// track has while no jitter is known).
    static func band(deviation: Double?, height: Double, most: Double) -> Double {
        guard let deviation else { return most }
        return min(most, max(deviation * bandWidths, height * leastBand))
    }

    static let bandWidths = 3.0
    static let leastBand = 0.05
}
