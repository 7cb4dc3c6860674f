import CVHostCore

/// A counting line: two points, and which side of a→b is "in" (left or right as seen on the
/// picture, facing from a to b). A track is on a side only once its anchor (of its filtered box:
/// the Kalman filter's, not the detector's jittering one) is a band's width from the line:
/// `minDistance` pixels, by default three times the track's own measured jitter (`TrackJitter`),
/// at least a twentieth and at most a quarter of its box's height. It crosses when, known on one
/// side, it is seen beyond the band on the other for `minFrames` frames in a row, and its step
/// across passes between the two points. A track that never leaves the band (a car parked on the
/// line, its box jittering over it) is never counted, however long it stays; one that stands on the
/// line and goes on is counted once.
public struct LineSettings: Equatable, Sendable {
    public let name: String
    public var segment: Segment
    public var inSide = Side.left
    public var anchor = Anchor.bottomCenter
    public var minFrames = 2
    /// The band's half width: pixels from the line a track's anchor must be, on either side, to be
    /// on that side; nil: from the track's jitter, at most `bandOfHeight` of its box's height.
    public var minDistance: Double?
    /// The band's widest half width by default, in box heights (a track's until its jitter is
    /// measured): more than a detector's usual jitter (a few pixels on a box of tens, up to 15% of
    /// its height), less than one step of a walker.
    public static let bandOfHeight = 0.25
    /// The input it watches; nil: every input.
    public var input: String?
    /// Its points are fractions of the frame's width and height (0..1), not pixels.
    public var fractions = false
    /// The labels it counts (a track's voted label); nil: every label.
    public var labels: Set<String>?

    public enum Side: String, Sendable { case left, right }

    public init(name: String, segment: Segment) {
        self.name = name
        self.segment = segment
    }

    /// Whether `other` has this line's shape (its points, in the same units, and its `in` side,
    /// which says what its counts mean): a line changed otherwise keeps its counts; one moved or
    /// turned round starts anew.
    public func hasShape(of other: LineSettings) -> Bool {
        segment == other.segment && fractions == other.fractions && inSide == other.inSide
    }
}

/// One counting line at work: per track, the side it was last seen on beyond the band and how many
/// frames it has been beyond it on the other; a crossing is counted once those frames reach
/// `minFrames` and its step passed between the line's ends (`LineSettings` says the rule).
struct LineWatch {
    /// Its settings in the frame's pixels (placed again when the frame's size changes).
    var settings: LineSettings
    private struct State {
        /// +1 left, -1 right: the side the track was last seen on beyond the band; 0: not yet.
        var side = 0.0
        /// The last anchor on `side`, and frames seen since beyond the band on the other.
        var last: Point
        var other = 0
    }
    private var states: [Int: State] = [:]
    /// Crossings per label (at most `CountedLabel.maxLabels` and `_other`).
    var counts: [String: (in: Int, out: Int)] = [:]

    /// - Parameter kept: counts to go on from (a run before this one's, `CountTotals`).
    init(_ settings: LineSettings, kept: [String: (in: Int, out: Int)] = [:]) {
        self.settings = settings
        counts = kept
    }

    /// Every count back to 0 (`reset_counts`); what it knows of each track stays.
    mutating func resetCounts() {
        counts = [:]
    }

    /// A track's speed as a measured zone it is inside says it (said on its crossing).
    struct Speed {
        let value: Double
        let unit: GroundPlane.SpeedUnit
        let zone: String
    }

    /// A track seen with `box` (its filtered box), its voted `label`, its boxes' `jitter` (a
    /// deviation, pixels, when known); `speed`, when a measured zone knows it.
    mutating func see(track: Int, label: String, box: Box, jitter: Double? = nil, speed: Speed? = nil,
                      into events: inout [AnalyticsEvent]) {
        // A label it does not count: as if the track were not there.
        if let labels = settings.labels, !labels.contains(label) { return }
        let p = box.point(settings.anchor)
        let offset = settings.segment.side(p)
        let band = settings.minDistance ?? TrackJitter.band(deviation: jitter, height: box.height, most: box.height * LineSettings.bandOfHeight)
        // Within the band it is on neither side: a box jittering over the line changes nothing.
        let side: Double = offset >= band ? 1 : offset <= -band ? -1 : 0
        guard var s = states[track], s.side != 0 else {
            if side != 0 { states[track] = State(side: side, last: p) }
            return
        }
        if side == s.side || side == 0 {
            if side == s.side { s.last = p }
            s.other = 0
            states[track] = s
            return
        }
        s.other += 1
        if s.other >= settings.minFrames {
            // Across between its two points (not around an end of it).
            if Segment(s.last, p).crosses(settings.segment) {
                let inward = (side > 0) == (settings.inSide == .left)
                let key = CountedLabel.key(label, in: counts)
                var c = counts[key] ?? (0, 0)
                if inward { c.in = c.in.addingClamped(1) } else { c.out = c.out.addingClamped(1) }
                counts[key] = c
                let total = counts.values.reduce((in: 0, out: 0)) { ($0.in.addingClamped($1.in), $0.out.addingClamped($1.out)) }
                events.append(.crossed(line: settings.name, track: track, label: label, direction: inward ? "in" : "out", counts: c, total: total,
                                       speed: speed))
            }
            s = State(side: side, last: p)
        }
        states[track] = s
    }

    mutating func end(track: Int) {
        states[track] = nil
    }
}
