import CVHostAnalytics
import CVHostCore
import CVHostLines

/// The commands that change tracks, zones and lines while the run goes on (AnalyticsRules applies
/// them), on stdin and over HTTP; each is an `analytics.changed` line on every output:
///
///     set_zone      PUT    /zones/NAME     {"points":[[x,y],...], ...}  (a zone's JSON, RuleCoding: what GET says)
///     remove_zone   DELETE /zones/NAME
///     set_line      PUT    /lines/NAME     {"points":[[x,y],[x,y]], "in":"left", ...}
///     remove_line   DELETE /lines/NAME
///     set_track     PUT    /tracks/PLUGIN  {"high":0.4, ...}
///     remove_track  DELETE /tracks/PLUGIN
///     set_mask      PUT    /masks/NAME     {"points":[[x,y],...], ...}  (boxes whose anchor is inside are not tracked)
///     remove_mask   DELETE /masks/NAME
///     set_filter    PUT    /filters/LABEL  {"min_area":2000, "input":"ID", ...}  (* for every label)
///     remove_filter DELETE /filters/LABEL  (every one of that label; with "input", that input's)
///     get_analytics GET    /analytics      every track, zone and line, and what each plugin counted on each input
///     reset_counts  POST   /analytics/reset {"source":"ID", "line":"NAME" or "zone":"NAME"}  (each optional)
///
/// A zone or line changed keeps its counts unless its shape changed (its points, its units, a
/// line's `in` side, the input it watches): the answer's `counts` says `kept` or `reset`. A track
/// set anew starts a new tracker (its tracks end, reason `removed`, with the analytics.summary);
/// its zones' and lines' counts go on (`kept`).
extension LiveCommands {
    /// Sets a zone, line, track, mask or filter (checked: LiveCommand), and keeps it (--state).
    func setAnalytics(_ change: AnalyticsRules.Change, origin: Origin) throws -> (created: Bool, result: JSONObject) {
        let changes = try analyticsChanger().1
        let (created, answer) = try applyAnalytics(change, origin: origin.rawValue)
        // A fleet's rules are its site's store's to keep.
        if origin != .fleet { changes.state?.record(change) }
        return (created, answer)
    }

    /// Applies one change (a command's, a reload's) and says it: `analytics.changed`, and the answer.
    func applyAnalytics(_ change: AnalyticsRules.Change, origin: String) throws -> (created: Bool, result: JSONObject) {
        let (rules, changes) = try analyticsChanger()
        let outcome = try rules.apply(change, plugins: changes.pluginNames, inputs: inputs.all.map(\.id))
        // Masks keep motion out too (--motion): each input's detector gets its masks now.
        if change.kind == .mask {
            let settings = rules.settings
            for source in inputs.all { source.motion?.replaceMasks(settings.masks(on: source.id)) }
        }
        return (outcome.change == "added", changed(change.kind, name: change.name, outcome, rules: rules, origin: origin))
    }

    func removeAnalytics(_ kind: AnalyticsJSON.Kind, name: String, input: String?, origin: Origin) throws -> JSONObject {
        let (rules, changes) = try analyticsChanger()
        // A label's filters: of one input (with "input"), else every one of that label.
        let inputs = kind == .filter ? (input.map { [$0] } ?? rules.settings.filters.filter { $0.label == name }.map(\.input)) : [input]
        let change: AnalyticsRules.Change = switch kind {
        case .zone: .zone(name: name, nil)
        case .line: .line(name: name, nil)
        case .track: .track(plugin: name, nil)
        case .mask: .mask(name: name, nil)
        case .filter: .filter(label: name, input: input, nil)
        }
        let answer = try applyAnalytics(change, origin: origin.rawValue).result
        for input in inputs where origin != .fleet { changes.state?.remove(kind, name: RunStateFile.key(kind, name: name, input: input)) }
        return answer
    }

    /// Every track, zone and line now, and the counts beside them.
    func analyticsList() -> JSONObject {
        guard let rules else { return JSONObject() }
        var o = AnalyticsJSON.json(rules.settings)
        o.set("counts", array: rules.counted().map(AnalyticsJSON.counts))
        return o
    }

    /// Counts back to 0: every line's and zone's, or those of one input, one line or one zone
    /// (`analytics.changed`, change `reset`, for each).
    /// - Throws: notFound for an input, line or zone the run does not have.
    func resetCounts(source: String?, line: String?, zone: String?, origin: Origin) throws -> JSONObject {
        let (rules, _) = try analyticsChanger()
        guard let counts else { throw CommandRefusal(.conflict, "this run cannot reset its counts") }
        let settings = rules.settings
        if let source, !inputs.all.contains(where: { $0.id == source }) { throw CommandRefusal(.notFound, "no input named \(source)") }
        if let line, !settings.lines.contains(where: { $0.name == line }) { throw CommandRefusal(.notFound, "no line named \(line)") }
        if let zone, !settings.zones.contains(where: { $0.name == zone }) { throw CommandRefusal(.notFound, "no zone named \(zone)") }
        let done = counts.reset(source: source, lines: line.map { [$0] }, zones: zone.map { [$0] }, by: origin.rawValue)
        var r = JSONObject()
        r.set("lines", strings: done.lines)
        r.set("zones", strings: done.zones)
        r.set("analytics", object: analyticsList())
        return r
    }

    private func analyticsChanger() throws -> (AnalyticsRules, InputChanges) {
        try refuseAfterEnd()
        guard let rules, let changes else { throw CommandRefusal(.conflict, "this run cannot change its analytics") }
        return (rules, changes)
    }

    /// Writes `analytics.changed` and makes the answer: what changed, its counts, and the whole set now.
    private func changed(_ kind: AnalyticsJSON.Kind, name: String, _ outcome: AnalyticsRules.Outcome, rules: AnalyticsRules,
                         origin: String) -> JSONObject {
        let now = rules.settings
        lines.writeWhileRunning(AnalyticsJSON.changedLine(kind, name: name, change: outcome.change, counts: outcome.counts, in: now, by: origin))
        var r = JSONObject()
        r.set("kind", kind.rawValue)
        r.set("name", name)
        r.set("change", outcome.change)
        r.set("counts", outcome.counts)
        r.set("analytics", object: AnalyticsJSON.json(now))
        return r
    }
}
