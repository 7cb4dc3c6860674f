import CVHostCore

/// A zone: a polygon with, per track, whether it is inside, entered and exited once a track's
/// anchor (of its filtered box) has been seen on the other side of its outline, beyond a band
/// along it, `minFrames` frames in a row: a box that jitters over the edge does not flicker in
/// and out. The band's half width is `minDistance` pixels, by default three times the track's own
/// measured jitter (`TrackJitter`), at least a twentieth and at most a fifth of the box's height,
/// and never more than a quarter of the zone's narrower side (a small zone can still be entered).
/// Also the tracks inside per label (occupancy), and `zone.dwell` once for a track that has
/// stayed `dwell` seconds. A zone of four points with `distances` (its sides' real lengths) measures
/// speed (GroundPlane): a track's way on the ground from where it came in to where it went out,
/// over the time between, on its `zone.exited`; and so far, on a line it crosses inside the zone.
public struct ZoneSettings: Equatable, Sendable {
    public let name: String
    public var polygon: Polygon
    public var anchor = Anchor.bottomCenter
    public var minFrames = 2
    /// The band's half width along the outline, pixels; nil: from the track's jitter, at most
    /// `bandOfHeight` of the box's height and a quarter of the zone's narrower side.
    public var minDistance: Double?
    public static let bandOfHeight = 0.2
    /// Seconds after which a track inside is said to linger (zone.dwell); nil: never.
    public var dwell: Double?
    /// The input it watches; nil: every input.
    public var input: String?
    /// Its points are fractions of the frame's width and height (0..1), not pixels.
    public var fractions = false
    /// The real length of each side (from each point to the next, the last back to the first):
    /// metres, or feet for mph. Four points only.
    public var distances: [Double]?
    public var speedUnit = GroundPlane.SpeedUnit.kmh
    /// The labels it watches (a track's voted label); nil: every label.
    public var labels: Set<String>?

    public init(name: String, polygon: Polygon) {
        self.name = name
        self.polygon = polygon
    }

    /// Whether `other` has this zone's shape (its points, in the same units): a zone changed
    /// otherwise (its dwell, its band) keeps its counts while the run goes on; a zone moved starts anew.
    public func hasShape(of other: ZoneSettings) -> Bool {
        polygon == other.polygon && fractions == other.fractions
    }
}

/// One zone at work: per track, whether it is inside and for how many frames it has been seen
/// beyond the band on the other side of the outline; it enters or exits once those reach
/// `minFrames` (`ZoneSettings` says the rule), and its dwell is said once past `dwell` seconds.
struct ZoneWatch {
    /// Its settings in the frame's pixels (placed again when the frame's size changes).
    var settings: ZoneSettings {
        didSet { ground = Self.ground(settings) }
    }
    /// Its ground measured, when it has `distances`.
    private(set) var ground: GroundPlane?
    private struct State {
        var inside = false
        /// Whether it has been seen on a side yet, beyond the band, and when this zone first saw it:
        /// a track that is inside from its first sight (born there, or there when the zone was
        /// drawn) has been in since then.
        var placed = false
        let born: Double
        /// Consecutive frames seen on the other side of the outline.
        var other = 0
        /// When it went in (its first frame inside), and whether zone.dwell was said.
        var since = 0.0
        var firstOther = 0.0
        var dwelt = false
        /// The label it is counted under while inside: its label when it came in.
        var label: String
        /// Where on the ground it came in (a measured zone), and when.
        var entryGround: Point?
        var entryTime = 0.0
    }
    private var states: [Int: State] = [:]
    private var occupancy: [String: Int] = [:]
    /// Tracks that came in so far, per label; those that went out, zone.dwell events, and the most
    /// tracks inside at once (for the run's summary).
    var entries: [String: Int] = [:]
    private(set) var exits = 0
    private(set) var dwells = 0
    private(set) var peak = 0

    /// - Parameter kept: entries to go on from (a run before this one's, `CountTotals`).
    init(_ settings: ZoneSettings, kept: [String: Int] = [:]) {
        self.settings = settings
        ground = Self.ground(settings)
        entries = kept
    }

    /// Every entry count back to 0 (`reset_counts`); who is inside now stays inside.
    mutating func resetCounts() {
        entries = [:]
        exits = 0
        dwells = 0
        peak = occupancy.values.reduce(0, +)
    }

    private static func ground(_ s: ZoneSettings) -> GroundPlane? {
        s.distances.flatMap { GroundPlane(corners: s.polygon.points, sides: $0) }
    }

    /// A track's speed, in the zone's unit, from where it came in to `box` at `time`: nil for a
    /// zone not measured, a track not inside, or less than `shortest` seconds since it came in.
    func speed(track: Int, box: Box, time: Double, shortest: Double = 0.25) -> Double? {
        guard let ground, let s = states[track], s.inside, let from = s.entryGround, time - s.entryTime >= shortest,
              let to = ground.ground(box.point(settings.anchor)) else { return nil }
        return settings.speedUnit.perSecond(from.distance(to: to) / (time - s.entryTime))
    }

    /// A track seen at `time` with `box` (its filtered box), its voted `label`, its boxes' `jitter`
    /// (a deviation, pixels, when known).
    mutating func see(track: Int, label: String, box: Box, jitter: Double? = nil, time: Double,
                      into events: inout [AnalyticsEvent]) {
        // A label it does not watch: as if the track were not there (one inside stays until it ends).
        if let labels = settings.labels, !labels.contains(label), states[track]?.inside != true { return }
        let p = box.point(settings.anchor)
        var s = states[track] ?? State(born: time, label: label)  // (counted under CountedLabel's key once it comes in)
        let most = min(box.height * ZoneSettings.bandOfHeight, settings.polygon.narrowerSide / 4)
        let band = settings.minDistance ?? TrackJitter.band(deviation: jitter, height: box.height, most: most)
        // Within the band along the outline it is on neither side: nothing changes.
        guard settings.polygon.distanceToOutline(p) >= band else {
            s.other = 0
            states[track] = s
            return
        }
        let inside = settings.polygon.contains(p)
        if inside == s.inside {
            s.other = 0
            s.placed = true
        } else {
            if s.other == 0 { s.firstOther = time }
            s.other += 1
            if s.other >= settings.minFrames {
                s.inside = inside
                s.other = 0
                if inside {
                    s.label = CountedLabel.key(label, in: entries)
                    s.since = s.placed ? s.firstOther : s.born
                    s.dwelt = false
                    s.entryGround = ground?.ground(p)
                    s.entryTime = time
                    events.append(.zone(.zoneEntered, zone: settings.name, track: track, label: label))
                    entries[s.label] = (entries[s.label] ?? 0).addingClamped(1)
                    change(s.label, by: 1, &events)
                } else {
                    // Its way from where it was seen coming in to where it is seen gone out (both a
                    // band and min_frames past the outline: the same lag at each end).
                    var speed: Double?
                    if let ground, let from = s.entryGround, let to = ground.ground(p), time > s.entryTime {
                        speed = settings.speedUnit.perSecond(from.distance(to: to) / (time - s.entryTime))
                    }
                    events.append(.zone(.zoneExited, zone: settings.name, track: track, label: s.label, seconds: s.firstOther - s.since,
                                        reason: "left", speed: speed.map { ($0, settings.speedUnit) }))
                    exits += 1
                    change(s.label, by: -1, &events)
                }
                s.placed = true
            }
        }
        if s.inside, !s.dwelt, let dwell = settings.dwell, time - s.since >= dwell {
            s.dwelt = true
            dwells += 1
            events.append(.zone(.zoneDwell, zone: settings.name, track: track, label: label, seconds: time - s.since))
        }
        states[track] = s
    }

    /// A track that ended at `time` (last seen then): out of the zone if it was in. `inputEnded`:
    /// it ended with the input (reason input_ended), and the zone's occupancy stays as last seen:
    /// the input's end is no one leaving (the live view, /metrics and a consumer keep the count
    /// the last picture showed).
    mutating func end(track: Int, time: Double, inputEnded: Bool, into events: inout [AnalyticsEvent]) {
        guard let s = states.removeValue(forKey: track), s.inside else { return }
        events.append(.zone(.zoneExited, zone: settings.name, track: track, label: s.label, seconds: time - s.since,
                            reason: inputEnded ? "input_ended" : "track_ended"))
        exits += 1
        if !inputEnded { change(s.label, by: -1, &events) }
    }

    private mutating func change(_ label: String, by delta: Int, _ events: inout [AnalyticsEvent]) {
        occupancy[label, default: 0] += delta
        let total = occupancy.values.reduce(0, +)
        peak = max(peak, total)
        events.append(.occupancy(zone: settings.name, label: label, count: occupancy[label]!, total: total))
    }

    /// Tracks inside now, per label.
    var counts: [String: Int] { occupancy }
}
