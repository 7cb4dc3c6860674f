/// A counting line: two points, and which side of a→b is "in" (left or right as seen on the
/// picture, facing from a to b). A track crosses it when its anchor, once on one side, is seen on
/// the other for `minFrames` frames in a row and, once, `minDistance` pixels from the line (by
/// default a tenth of the box's height), and the step across passes between the two points:
/// counted once per crossing however the box jitters over the line, or stands on it.
public struct LineSettings: Equatable, Sendable {
    public let name: String
    public var segment: Segment
    public var inSide = Side.left
    public var anchor = Anchor.bottomCenter
    public var minFrames = 2
    /// Pixels from the line a track must be seen at on its new side; nil: a tenth of its box's height.
    public var minDistance: Double?
    /// The input it watches; nil: every input.
    public var input: String?
    /// Its points are fractions of the frame's width and height (0..1), not pixels.
    public var fractions = false

    public enum Side: String, Sendable { case left, right }

    public init(name: String, segment: Segment) {
        self.name = name
        self.segment = segment
    }
}

struct LineWatch {
    let settings: LineSettings
    private struct State {
        /// +1 left, -1 right; 0 until the track is first seen off the line.
        var side = 0.0
        /// The last anchor on `side`, frames seen since on the other, and whether it was far enough from the line.
        var last: Point
        var other = 0
        var far = false
    }
    private var states: [Int: State] = [:]
    private(set) var counts: [String: (in: Int, out: Int)] = [:]

    init(_ settings: LineSettings) {
        self.settings = settings
    }

    mutating func see(track: Int, label: String, box: Box, into events: inout [AnalyticsEvent]) {
        let p = box.point(settings.anchor)
        let offset = settings.segment.side(p)
        let side: Double = offset > 0 ? 1 : offset < 0 ? -1 : 0
        guard var s = states[track], s.side != 0 else {
            if side != 0 { states[track] = State(side: side, last: p) }
            return
        }
        if side == s.side || side == 0 {
            if side == s.side { s.last = p }
            s.other = 0
            s.far = false
            states[track] = s
            return
        }
        s.other += 1
        if abs(offset) >= (settings.minDistance ?? box.height / 10) { s.far = true }
        if s.other >= settings.minFrames && s.far {
            // Across between its two points (not around an end of it).
            if Segment(s.last, p).crosses(settings.segment) {
                let inward = (side > 0) == (settings.inSide == .left)
                let key = CountedLabel.key(label, in: counts)
                var c = counts[key] ?? (0, 0)
                if inward { c.in += 1 } else { c.out += 1 }
                counts[key] = c
                events.append(.crossed(line: settings.name, track: track, label: label, direction: inward ? "in" : "out", counts: c))
            }
            s = State(side: side, last: p)
        }
        states[track] = s
    }

    mutating func end(track: Int) {
        states[track] = nil
    }
}
