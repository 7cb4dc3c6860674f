import CVHostAnalytics
import CVHostCore
import CVHostLines

/// Tracks, zones and lines as JSON, both ways: what `GET /analytics` and `analytics.changed` say
/// of each, and what a body of `PUT /zones/NAME`, `/lines/NAME`, `/tracks/PLUGIN` (or set_zone,
/// set_line, set_track on stdin) gives, turned into the text --zone, --line and --track take, so
/// that one parser (AnalyticsSpec) checks both. What GET says can be sent back as it is.
///
///     zone   {"points":[[x,y],[x,y],[x,y],...], "units":"auto", "anchor":"bottom_center", "min_frames":2,
///             "min_distance":N, "dwell":S, "input":"ID", "distances":[a,b,c,d], "speed_unit":"kmh", "labels":"car"}
///     line   {"points":[[x,y],[x,y]], "in":"left", "units", "anchor", "min_frames", "min_distance", "input", "labels":"person+car"}
///     track  {"high":0.4, "low":0.1, "min_hits":3, "lost":1.5, "iou":0.2, "by_label":false}
///     mask   {"points":[[x,y],[x,y],[x,y],...], "units", "anchor", "input"}
///     filter {"min_score":0.5, "min_area":A, "max_area":A, "min_ratio":R, "max_ratio":R, "input"}
enum AnalyticsJSON {
    enum Kind: String, CaseIterable {
        case zone, line, track, mask, filter

        /// The options a body may give (beside points).
        var options: [String] {
            switch self {
            case .zone: ["units", "anchor", "min_frames", "min_distance", "dwell", "input", "distances", "speed_unit", "labels"]
            case .line: ["in", "units", "anchor", "min_frames", "min_distance", "input", "labels"]
            case .track: ["high", "low", "min_hits", "lost", "iou", "by_label"]
            case .mask: ["units", "anchor", "input"]
            case .filter: ["min_score", "min_area", "max_area", "min_ratio", "max_ratio", "input"]
            }
        }

        /// The field that names one (the route's last part: /tracks/PLUGIN, /filters/LABEL, /zones/NAME).
        var key: String {
            switch self {
            case .track: "plugin"
            case .filter: "label"
            case .zone, .line, .mask: "name"
            }
        }

        /// Whether it is drawn: given by its points.
        var hasPoints: Bool { self == .zone || self == .line || self == .mask }
    }

    /// Every field a body of any kind may have.
    static let fields: Set<String> = Set(Kind.allCases.flatMap(\.options) + ["points"])

    /// The text --zone, --line or --track takes for `name` and a body's fields.
    /// - Throws: 400 naming a field of another kind, a value of the wrong type, points that are not points.
    static func specText(_ kind: Kind, name: String, _ o: [String: CommandValue]) throws(CommandRefusal) -> String {
        let given = Set(o.keys).intersection(fields)
        if let stray = given.sorted().first(where: { $0 != "points" && !kind.options.contains($0) }) ?? (!kind.hasPoints && given.contains("points") ? "points" : nil) {
            throw CommandRefusal(400, "a \(kind.rawValue) has no \"\(stray)\" (it has \(((kind.hasPoints ? ["points"] : []) + kind.options).joined(separator: ", ")))")
        }
        var options: [String] = []
        for key in kind.options {
            guard let v = o[key] else { continue }
            let text: String
            switch v {
            case .number(let n): text = LiveCommands.number(n)
            case .bool(let b): text = b ? "true" : "false"
            case .string(let s) where !s.isEmpty && !s.contains(where: { ",:= ".contains($0) }): text = s
            case .numbers(let list) where key == "distances": text = list.map(LiveCommands.number).joined(separator: ",")
            default: throw CommandRefusal(400, "\"\(key)\" is a number, true/false or a word (without , : = or spaces)")
            }
            options.append("\(key)=\(text)")
        }
        let tail = options.isEmpty ? "" : ":" + options.joined(separator: ",")
        if !kind.hasPoints { return name + tail }
        guard case .points(let points)? = o["points"] else {
            throw CommandRefusal(400, "a \(kind.rawValue) needs \"points\": [[x,y],[x,y]\(kind == .zone ? ",[x,y],..." : "")] in the frame's pixels (or fractions of it)")
        }
        return "\(name)=" + points.map { "\(LiveCommands.number($0[0])),\(LiveCommands.number($0[1]))" }.joined(separator: " ") + tail
    }

    static func json(_ z: ZoneSettings) -> JSONObject {
        var j = JSONObject()
        j.set("name", z.name)
        j.set("points", numberLists: z.polygon.points.map { [$0.x, $0.y] }, decimals: 6)
        j.set("units", z.fractions ? "fractions" : "pixels")
        j.set("anchor", z.anchor.rawValue)
        j.set("min_frames", z.minFrames)
        if let d = z.minDistance { j.set("min_distance", d, decimals: 3) }
        if let dwell = z.dwell { j.set("dwell", dwell, decimals: 3) }
        if let input = z.input { j.set("input", input) }
        if let sides = z.distances {
            j.set("distances", numbers: sides)
            j.set("speed_unit", z.speedUnit.rawValue)
        }
        if let labels = z.labels { j.set("labels", labels.sorted().joined(separator: "+")) }
        return j
    }

    static func json(_ l: LineSettings) -> JSONObject {
        var j = JSONObject()
        j.set("name", l.name)
        j.set("points", numberLists: [l.segment.a, l.segment.b].map { [$0.x, $0.y] }, decimals: 6)
        j.set("units", l.fractions ? "fractions" : "pixels")
        j.set("in", l.inSide.rawValue)
        j.set("anchor", l.anchor.rawValue)
        j.set("min_frames", l.minFrames)
        if let d = l.minDistance { j.set("min_distance", d, decimals: 3) }
        if let input = l.input { j.set("input", input) }
        if let labels = l.labels { j.set("labels", labels.sorted().joined(separator: "+")) }
        return j
    }

    static func json(_ f: BoxFilter) -> JSONObject {
        var j = JSONObject()
        j.set("label", f.label)
        for (key, value) in [("min_score", f.minScore), ("min_area", f.minArea), ("max_area", f.maxArea), ("min_ratio", f.minRatio),
                             ("max_ratio", f.maxRatio)] {
            if let value { j.set(key, value, decimals: 6) }
        }
        if let input = f.input { j.set("input", input) }
        return j
    }

    static func json(_ m: BoxMask) -> JSONObject {
        var j = JSONObject()
        j.set("name", m.name)
        j.set("points", numberLists: m.polygon.points.map { [$0.x, $0.y] }, decimals: 6)
        j.set("units", m.fractions ? "fractions" : "pixels")
        j.set("anchor", m.anchor.rawValue)
        if let input = m.input { j.set("input", input) }
        return j
    }

    static func json(_ t: AnalyticsSpec.Tracked) -> JSONObject {
        var j = JSONObject()
        j.set("plugin", t.plugin)
        j.set("high", t.settings.high, decimals: 6)
        j.set("low", t.settings.low, decimals: 6)
        j.set("min_hits", t.settings.minHits)
        j.set("lost", t.settings.lost, decimals: 6)
        j.set("iou", t.settings.matchIoU, decimals: 6)
        j.set("by_label", t.settings.byLabel)
        return j
    }

    /// What one tracked plugin counted on one input (GET /analytics's `counts`): each line's
    /// crossings and each zone's occupancy and entries, in all and per label; lines and zones that
    /// counted nothing yet at 0.
    ///
    ///     {"source":"door", "plugin":"detect",
    ///      "lines": {"gate": {"in":3, "out":2, "labels": {"person": {"in":3, "out":2}}}},
    ///      "zones": {"bay": {"occupancy":1, "entered":4, "labels": {"car": {"occupancy":1, "entered":4}}}}}
    static func counts(_ c: (source: String, plugin: String, analytics: BoxAnalytics)) -> JSONObject {
        var o = JSONObject()
        o.set("source", c.source)
        o.set("plugin", c.plugin)
        let counts = c.analytics.counts
        var lines = JSONObject()
        for line in c.analytics.lines { lines.set(line.name, object: Self.lineCounts(line.name, counts)) }
        o.set("lines", object: lines)
        var zones = JSONObject()
        for zone in c.analytics.zones {
            let mine = counts.zones.filter { $0.zone == zone.name }
            var z = JSONObject()
            z.set("occupancy", mine.reduce(0) { $0 + $1.inside })
            z.set("entered", mine.reduce(0) { $0.addingClamped($1.entered) })
            var labels = JSONObject()
            for m in mine {
                var l = JSONObject()
                l.set("occupancy", m.inside)
                l.set("entered", m.entered)
                labels.set(m.label, object: l)
            }
            z.set("labels", object: labels)
            zones.set(zone.name, object: z)
        }
        o.set("zones", object: zones)
        return o
    }

    /// One line's crossings, in all and per label: {"in":3, "out":2, "labels": {"person": {"in":3, "out":2}}}.
    static func lineCounts(_ name: String, _ counts: BoxAnalytics.Counts) -> JSONObject {
        let mine = counts.crossings.filter { $0.line == name }
        var o = JSONObject()
        o.set("in", mine.reduce(0) { $0.addingClamped($1.in) })
        o.set("out", mine.reduce(0) { $0.addingClamped($1.out) })
        var labels = JSONObject()
        for m in mine {
            var l = JSONObject()
            l.set("in", m.in)
            l.set("out", m.out)
            labels.set(m.label, object: l)
        }
        o.set("labels", object: labels)
        return o
    }

    /// An `analytics.changed` line: the change (`change`, `counts`) of the track, zone, line, mask
    /// or filter called `name`, with its settings in `s` now (null: removed), on the input it
    /// watches, or on `source` when the change was of one input's (a reset of its counts).
    static func changedLine(_ kind: Kind, name: String, change: String, counts: String?, in s: AnalyticsSettings, source: String? = nil,
                            by: String) -> JSONObject {
        let (settings, input): (JSONObject?, String?) = switch kind {
        case .zone: s.zones.first { $0.name == name }.map { (json($0), $0.input) } ?? (nil, nil)
        case .line: s.lines.first { $0.name == name }.map { (json($0), $0.input) } ?? (nil, nil)
        case .track: (s.tracked.first { $0.plugin == name }.map(json), nil)
        case .mask: s.masks.first { $0.name == name }.map { (json($0), $0.input) } ?? (nil, nil)
        case .filter: s.filters.first { $0.label == name }.map { (json($0), $0.input) } ?? (nil, nil)
        }
        var e = JSONObject.envelope(event: "analytics.changed", source: source ?? input, plugin: kind == .track ? name : nil, tsNs: HostClock.wallNs())
        e.set("kind", kind.rawValue)
        e.set("name", name)
        e.set("change", change)
        e.set("counts", counts)
        if let settings { e.set("settings", object: settings) } else { e.set("settings", nil as String?) }
        e.set("by", by)
        return e
    }

    /// The whole set: GET /analytics, and the result of each change.
    static func json(_ s: AnalyticsSettings) -> JSONObject {
        var o = JSONObject()
        o.set("tracks", array: s.tracked.map(json))
        o.set("zones", array: s.zones.map(json))
        o.set("lines", array: s.lines.map(json))
        // Boxes ignored before they are tracked (--filter, --mask).
        o.set("filters", array: s.filters.map(json))
        o.set("masks", array: s.masks.map(json))
        // Zones and lines of an input removed while an earlier run went on, set aside at start.
        if !s.setAside.isEmpty { o.set("set_aside", strings: s.setAside) }
        return o
    }
}
