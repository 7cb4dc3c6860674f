/// A zone: a polygon with, per track, whether it is inside, entered and exited once a track's
/// anchor has been seen on the other side of its outline `minFrames` frames in a row (a box that
/// jitters over the edge does not flicker in and out), the tracks inside per label (occupancy), and
/// `zone.dwell` once for a track that has stayed `dwell` seconds.
public struct ZoneSettings: Equatable, Sendable {
    public let name: String
    public var polygon: Polygon
    public var anchor = Anchor.bottomCenter
    public var minFrames = 2
    /// Seconds after which a track inside is said to linger (zone.dwell); nil: never.
    public var dwell: Double?
    /// The input it watches; nil: every input.
    public var input: String?
    /// Its points are fractions of the frame's width and height (0..1), not pixels.
    public var fractions = false

    public init(name: String, polygon: Polygon) {
        self.name = name
        self.polygon = polygon
    }
}

struct ZoneWatch {
    let settings: ZoneSettings
    private struct State {
        var inside = false
        /// Consecutive frames seen on the other side of the outline.
        var other = 0
        /// When it went in (its first frame inside), and whether zone.dwell was said.
        var since = 0.0
        var firstOther = 0.0
        var dwelt = false
        let label: String
    }
    private var states: [Int: State] = [:]
    private var occupancy: [String: Int] = [:]
    /// Tracks that came in so far, per label.
    private(set) var entries: [String: Int] = [:]

    init(_ settings: ZoneSettings) {
        self.settings = settings
    }

    /// A track seen at `time` with `box`.
    mutating func see(track: Int, label: String, box: Box, time: Double, into events: inout [AnalyticsEvent]) {
        let inside = settings.polygon.contains(box.point(settings.anchor))
        var s = states[track] ?? State(label: CountedLabel.key(label, in: entries))
        if inside == s.inside {
            s.other = 0
        } else {
            if s.other == 0 { s.firstOther = time }
            s.other += 1
            if s.other >= settings.minFrames {
                s.inside = inside
                s.other = 0
                if inside {
                    s.since = s.firstOther
                    s.dwelt = false
                    events.append(.zone("zone.entered", zone: settings.name, track: track, label: label))
                    entries[s.label, default: 0] += 1
                    change(s.label, by: 1, &events)
                } else {
                    events.append(.zone("zone.exited", zone: settings.name, track: track, label: label, seconds: s.firstOther - s.since,
                                        reason: "left"))
                    change(s.label, by: -1, &events)
                }
            }
        }
        if s.inside, !s.dwelt, let dwell = settings.dwell, time - s.since >= dwell {
            s.dwelt = true
            events.append(.zone("zone.dwell", zone: settings.name, track: track, label: label, seconds: time - s.since))
        }
        states[track] = s
    }

    /// A track that ended at `time` (last seen then): out of the zone if it was in.
    mutating func end(track: Int, time: Double, into events: inout [AnalyticsEvent]) {
        guard let s = states.removeValue(forKey: track), s.inside else { return }
        events.append(.zone("zone.exited", zone: settings.name, track: track, label: s.label, seconds: time - s.since, reason: "track_ended"))
        change(s.label, by: -1, &events)
    }

    private mutating func change(_ label: String, by delta: Int, _ events: inout [AnalyticsEvent]) {
        occupancy[label, default: 0] += delta
        events.append(.occupancy(zone: settings.name, label: label, count: occupancy[label]!, total: occupancy.values.reduce(0, +)))
    }

    /// Tracks inside now, per label.
    var counts: [String: Int] { occupancy }
}
