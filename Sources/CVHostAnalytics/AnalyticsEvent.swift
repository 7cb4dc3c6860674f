import CVHostLines

/// What the analytics stage says, each a line of its own (`event` is its kind; the envelope
/// gives the input, the plugin whose boxes it followed, and the frame).
public struct AnalyticsEvent: Sendable {
    /// The event, as the line's `event` names it.
    public enum Kind: String, Sendable, CaseIterable {
        case trackStarted = "track.started", trackEnded = "track.ended", trackStationary = "track.stationary"
        case zoneEntered = "zone.entered", zoneExited = "zone.exited", zoneOccupancy = "zone.occupancy", zoneDwell = "zone.dwell"
        case lineCrossed = "line.crossed"
        case summary = "analytics.summary", timeJumped = "input.time_jumped"
    }

    public let kind: Kind
    public let data: JSONObject
    /// The track it is about, if any (its `track_id`), and that track's label.
    public var track: Int?
    public var label: String?

    init(kind: Kind, data: JSONObject, track: Int? = nil, label: String? = nil) {
        self.kind = kind
        self.data = data
        self.track = track
        self.label = label
    }

    /// A box as every line has one: {x, y, width, height} in the frame's pixels.
    public static func box(_ b: Box) -> JSONObject {
        var o = JSONObject()
        o.set("x", b.x, decimals: 2)
        o.set("y", b.y, decimals: 2)
        o.set("width", b.width, decimals: 2)
        o.set("height", b.height, decimals: 2)
        return o
    }

    static func trackStarted(_ t: Track) -> AnalyticsEvent {
        var o = JSONObject()
        o.set("track_id", t.id)
        o.set("label", t.label)
        o.set("labels", object: labels(t))
        o.set("first_seen", t.firstTime)
        o.set("frames", t.frames)
        o.set("bounds", object: box(t.lastBox))
        return AnalyticsEvent(kind: .trackStarted, data: o, track: t.id, label: t.label)
    }

    /// A track became stationary (its box stayed where it settled for the tracker's `stationary`
    /// seconds: `since` is when it settled), or moved from there (`stationary` false).
    static func trackStationary(_ t: Track, stationary: Bool, time: Double) -> AnalyticsEvent {
        var o = JSONObject()
        o.set("track_id", t.id)
        o.set("label", t.label)
        o.set("stationary", stationary)
        if stationary { o.set("since", t.settled.time) }
        o.set("bounds", object: box(t.lastBox))
        return AnalyticsEvent(kind: .trackStationary, data: o, track: t.id, label: t.label)
    }

    /// `reason`: "lost" (not seen for `lost` seconds) or "input_ended".
    /// How often each label came on a track's boxes.
    static func labels(_ t: Track) -> JSONObject {
        var o = JSONObject()
        for (label, n) in t.labels.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }) { o.set(label, n) }
        return o
    }

    static func trackEnded(_ t: Track, reason: String) -> AnalyticsEvent {
        var o = JSONObject()
        o.set("track_id", t.id)
        o.set("label", t.label)
        o.set("labels", object: labels(t))
        o.set("first_seen", t.firstTime)
        o.set("last_seen", t.lastTime)
        o.set("seconds", t.lastTime - t.firstTime)
        o.set("frames", t.frames)
        o.set("first_bounds", object: box(t.firstBox))
        o.set("last_bounds", object: box(t.lastBox))
        o.set("reason", reason)
        return AnalyticsEvent(kind: .trackEnded, data: o, track: t.id, label: t.label)
    }

    static func zone(_ kind: Kind, zone: String, track: Int, label: String, seconds: Double? = nil, reason: String? = nil,
                     speed: (value: Double, unit: GroundPlane.SpeedUnit)? = nil) -> AnalyticsEvent {
        var o = JSONObject()
        o.set("zone", zone)
        o.set("track_id", track)
        o.set("label", label)
        if let seconds { o.set("seconds", seconds) }
        if let reason { o.set("reason", reason) }
        if let speed { setSpeed(&o, speed) }
        return AnalyticsEvent(kind: kind, data: o, track: track, label: label)
    }

    /// `speed` and `speed_unit`.
    private static func setSpeed(_ o: inout JSONObject, _ speed: (value: Double, unit: GroundPlane.SpeedUnit)) {
        o.set("speed", speed.value, decimals: 1)
        o.set("speed_unit", speed.unit.rawValue)
    }

    static func occupancy(zone: String, label: String, count: Int, total: Int) -> AnalyticsEvent {
        var o = JSONObject()
        o.set("zone", zone)
        o.set("label", label)
        o.set("count", count)
        o.set("total", total)
        return AnalyticsEvent(kind: .zoneOccupancy, data: o)
    }

    static func crossed(line: String, track: Int, label: String, direction: String, counts: (in: Int, out: Int), total: (in: Int, out: Int),
                        speed: LineWatch.Speed? = nil) -> AnalyticsEvent {
        var o = JSONObject()
        o.set("line", line)
        o.set("track_id", track)
        o.set("label", label)
        o.set("direction", direction)
        o.set("in", counts.in)
        o.set("out", counts.out)
        o.set("total_in", total.in)
        o.set("total_out", total.out)
        if let speed {
            setSpeed(&o, (speed.value, speed.unit))
            o.set("speed_zone", speed.zone)
        }
        return AnalyticsEvent(kind: .lineCrossed, data: o, track: track, label: label)
    }

    /// The run's totals for one tracked plugin on one input, at its end: tracks, each line's
    /// crossings in and out per label and in all, each zone's entries per label, exits, dwell
    /// events and the most tracks inside at once.
    static func summary(tracksStarted: Int, untracked: Int, filtered: [String: Int], lines: [LineWatch], zones: [ZoneWatch]) -> AnalyticsEvent {
        func perLabel(_ counts: [String: Int]) -> JSONObject {
            var o = JSONObject()
            for (label, n) in counts.sorted(by: { $0.key < $1.key }) { o.set(label, n) }
            return o
        }
        var o = JSONObject()
        o.set("tracks_started", tracksStarted)
        o.set("untracked_results", untracked)
        o.set("filtered_results", object: perLabel(filtered))
        o.set("lines", array: lines.map { l in
            var j = JSONObject()
            j.set("line", l.settings.name)
            j.set("in", object: perLabel(l.counts.mapValues(\.in)))
            j.set("out", object: perLabel(l.counts.mapValues(\.out)))
            j.set("total_in", l.counts.values.reduce(0) { $0 + $1.in })
            j.set("total_out", l.counts.values.reduce(0) { $0 + $1.out })
            return j
        })
        o.set("zones", array: zones.map { z in
            var j = JSONObject()
            j.set("zone", z.settings.name)
            j.set("entries", object: perLabel(z.entries))
            j.set("total_entries", z.entries.values.reduce(0, +))
            j.set("exits", z.exits)
            j.set("dwell_events", z.dwells)
            j.set("peak_occupancy", z.peak)
            return j
        })
        return AnalyticsEvent(kind: .summary, data: o)
    }

    /// The input's timestamps jumped (back, or far ahead of the time that passed): said once an input.
    public static func timeJumped(fromNs: Int64, toNs: Int64) -> AnalyticsEvent {
        var o = JSONObject()
        o.set("from_pts", Double(fromNs) / 1e9)
        o.set("to_pts", Double(toNs) / 1e9)
        return AnalyticsEvent(kind: .timeJumped, data: o)
    }
}
