import CVHostOutput

/// What the analytics stage says, each a line of its own (`event` is its kind; the envelope
/// gives the input, the plugin whose boxes it followed, and the frame).
public struct AnalyticsEvent: Sendable {
    /// track.started, track.ended, zone.entered, zone.exited, zone.occupancy, zone.dwell, line.crossed.
    public let kind: String
    public let data: JSONObject

    static func box(_ b: Box) -> JSONObject {
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
        o.set("first_seen", t.firstTime)
        o.set("frames", t.frames)
        o.set("bounds", object: box(t.lastBox))
        return AnalyticsEvent(kind: "track.started", data: o)
    }

    /// `reason`: "lost" (not seen for `lost` seconds) or "input_ended".
    static func trackEnded(_ t: Track, reason: String) -> AnalyticsEvent {
        var o = JSONObject()
        o.set("track_id", t.id)
        o.set("label", t.label)
        o.set("first_seen", t.firstTime)
        o.set("last_seen", t.lastTime)
        o.set("seconds", t.lastTime - t.firstTime)
        o.set("frames", t.frames)
        o.set("first_bounds", object: box(t.firstBox))
        o.set("last_bounds", object: box(t.lastBox))
        o.set("reason", reason)
        return AnalyticsEvent(kind: "track.ended", data: o)
    }

    static func zone(_ kind: String, zone: String, track: Int, label: String, seconds: Double? = nil, reason: String? = nil) -> AnalyticsEvent {
        var o = JSONObject()
        o.set("zone", zone)
        o.set("track_id", track)
        o.set("label", label)
        if let seconds { o.set("seconds", seconds) }
        if let reason { o.set("reason", reason) }
        return AnalyticsEvent(kind: kind, data: o)
    }

    static func occupancy(zone: String, label: String, count: Int, total: Int) -> AnalyticsEvent {
        var o = JSONObject()
        o.set("zone", zone)
        o.set("label", label)
        o.set("count", count)
        o.set("total", total)
        return AnalyticsEvent(kind: "zone.occupancy", data: o)
    }

    static func crossed(line: String, track: Int, label: String, direction: String, counts: (in: Int, out: Int)) -> AnalyticsEvent {
        var o = JSONObject()
        o.set("line", line)
        o.set("track_id", track)
        o.set("label", label)
        o.set("direction", direction)
        o.set("in", counts.in)
        o.set("out", counts.out)
        return AnalyticsEvent(kind: "line.crossed", data: o)
    }
}
