import CVHostAnalytics
import CVHostCore
import CVHostLines

/// Tracks, zones, lines, masks and filters as GET /analytics and `analytics.changed` say them:
/// each in its one JSON shape (RuleCoding), and the counts beside them. A command's body is that
/// shape too (`RuleFields(kind, body)`), so what GET says can be sent back as it is.
enum AnalyticsJSON {
    typealias Kind = RuleKind

    static func json(_ rule: some AnalyticsRule) -> JSONObject { JSONObject(encoding: rule) }

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
        let rule: (any AnalyticsRule)? = switch kind {
        case .zone: s.zones.first { $0.name == name }
        case .line: s.lines.first { $0.name == name }
        case .track: s.tracked.first { $0.plugin == name }
        case .mask: s.masks.first { $0.name == name }
        case .filter: s.filters.first { $0.label == name }
        }
        let settings = rule.map { json($0) }, input = rule?.ruleInput
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
        o.set("tracks", array: s.tracked.map { json($0) })
        o.set("zones", array: s.zones.map { json($0) })
        o.set("lines", array: s.lines.map { json($0) })
        // Boxes ignored before they are tracked (--filter, --mask).
        o.set("filters", array: s.filters.map { json($0) })
        o.set("masks", array: s.masks.map { json($0) })
        // Zones and lines of an input removed while an earlier run went on, set aside at start.
        if !s.setAside.isEmpty { o.set("set_aside", strings: s.setAside) }
        return o
    }
}
