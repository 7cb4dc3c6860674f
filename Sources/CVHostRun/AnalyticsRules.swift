import CVHostAnalytics
import CVHostCore
import CVHostPlugins

/// The run's analytics as they stand: the settings of --track, --zone and --line, changed while
/// the run goes on (`apply`), and every runner's slot they are applied to. A change lands between
/// two frames of each input, so that a frame is judged by one set of rules.
final class AnalyticsRules: Sendable {
    private let state: Locked<(settings: AnalyticsSettings, slots: [TrackingSlot])>
    /// The counts of earlier runs (`--state`), which a new runner's lines and zones go on from.
    private let kept: KeptTotals?
    /// The inputs' motion is looked for (--motion), which masks keep out too: a mask needs no track then.
    private let motion: Bool

    init(_ settings: AnalyticsSettings, kept: KeptTotals? = nil, motion: Bool = false) {
        state = Locked((settings, []))
        self.kept = kept
        self.motion = motion
    }

    var settings: AnalyticsSettings { state.withLock { $0.settings } }

    /// The analytics slot of a new runner (the plugin called `plugin`, `index`th --plugin, on input
    /// `source`), filled when that plugin's boxes are followed.
    func stage(plugin: String, index: Int, source: String, live: Bool, confidence: Double?) -> TrackingSlot {
        let slot = TrackingSlot(source: source, plugin: plugin, pluginIndex: index, live: live, confidence: confidence)
        let kept = kept?.totals(source: source, plugin: plugin) ?? CountTotals()
        state.withLock { s in
            slot.replace(with: s.settings.stage(plugin: plugin, index: index, source: source, live: live, confidence: confidence, kept: kept))
            s.slots.append(slot)
        }
        return slot
    }

    /// The slots of runners destroyed while the run goes on (an input removed or changed): no
    /// longer changed; what they counted is kept (an input changed goes on from it).
    func forget(_ runners: [PluginRunner]) {
        let gone = runners.compactMap { $0.trackingSlot }
        kept?.update(Self.totals(of: gone))
        state.withLock { s in s.slots.removeAll { slot in gone.contains { $0 === slot } } }
    }

    /// An input changed (opened anew): the new runners' lines and zones go on from what the old
    /// ones counted to their end, plugin by plugin. Before the new runners' first frame.
    func carry(from old: [PluginRunner], to new: [PluginRunner]) {
        for slot in new.compactMap(\.trackingSlot) {
            guard let before = old.lazy.compactMap(\.trackingSlot).first(where: { $0.plugin == slot.plugin })?.tracked else { continue }
            slot.tracked?.analytics.goOn(from: before.analytics.totals)
        }
    }

    /// Input `source`'s lines and zones go on from `totals` (by plugin): those of the same name and
    /// shape take its counts. A fleet's node that took an input over, once its rules are set.
    func goOn(source: String, from totals: [String: CountTotals]) {
        for slot in state.withLock({ $0.slots }) where slot.source == source {
            if let t = totals[slot.plugin] { slot.tracked?.analytics.goOn(from: t) }
        }
    }

    /// The analytics of every tracked plugin at work, by input and plugin (GET /analytics's counts).
    func counted() -> [(source: String, plugin: String, analytics: BoxAnalytics)] {
        let slots = state.withLock { $0.slots }
        return slots.compactMap { slot in slot.tracked.map { (slot.source, slot.plugin, $0.analytics) } }
    }

    /// What every tracked plugin at work has counted, by input and plugin.
    func totals() -> [(source: String, plugin: String, totals: CountTotals)] { Self.totals(of: state.withLock { $0.slots }) }

    private static func totals(of slots: [TrackingSlot]) -> [(source: String, plugin: String, totals: CountTotals)] {
        slots.compactMap { slot in slot.tracked.map { (slot.source, slot.plugin, $0.analytics.totals) } }
    }

    /// Counts back to 0, of input `source` (nil: every input): of the lines and zones named (both
    /// nil: every one). - Returns: the names of the lines and zones set back.
    func resetCounts(source: String?, lines: Set<String>?, zones: Set<String>?) -> (lines: [String], zones: [String]) {
        state.withLock { s in
            let lineNames = (lines == nil && zones != nil) ? Set<String>() : lines
            let zoneNames = (zones == nil && lines != nil) ? Set<String>() : zones
            for slot in s.slots where source == nil || slot.source == source {
                slot.tracked?.analytics.resetCounts(lines: lineNames, zones: zoneNames)
            }
            let on = { (input: String?) in source == nil || input == nil || input == source }
            return (s.settings.lines.filter { on($0.input) && lineNames?.contains($0.name) ?? true }.map(\.name),
                    s.settings.zones.filter { on($0.input) && zoneNames?.contains($0.name) ?? true }.map(\.name))
        }
    }

    /// One change: a zone, line, track, mask or filter set (added, or put in place of the one of its
    /// name; a filter of its label and input) or removed (nil; a label's filters: of `input`, or all).
    enum Change: Equatable {
        case zone(name: String, ZoneSettings?)
        case line(name: String, LineSettings?)
        case track(plugin: String, AnalyticsSpec.Tracked?)
        case mask(name: String, BoxMask?)
        case filter(label: String, input: String?, BoxFilter?)

        var kind: RuleKind {
            switch self {
            case .zone: .zone
            case .line: .line
            case .track: .track
            case .mask: .mask
            case .filter: .filter
            }
        }

        /// What it names: a zone's, line's or mask's name, a track's plugin, a filter's label.
        var name: String {
            switch self {
            case .zone(let name, _), .line(let name, _), .mask(let name, _): name
            case .track(let plugin, _): plugin
            case .filter(let label, _, _): label
            }
        }

        /// Whether it removes what it names (rather than sets it).
        var removes: Bool {
            switch self {
            case .zone(_, let z): z == nil
            case .line(_, let l): l == nil
            case .track(_, let t): t == nil
            case .mask(_, let m): m == nil
            case .filter(_, _, let f): f == nil
            }
        }
    }

    /// What a change did: `added`, `changed` or `removed`; and whether the counts were `kept` (a
    /// zone or line of the same shape) or `reset` (moved, turned round, a new tracker), nil when removed.
    struct Outcome {
        let change: String
        var counts: String?
    }

    /// Applies one change to the settings and to every runner's analytics, between two of its frames.
    /// - Parameters: plugins, inputs: the run's plugins' and inputs' names now.
    /// - Throws: notFound (removing one that is not there), conflict (the most zones or lines; zones and lines
    ///   without a track), unprocessable (an input or plugin the run does not have).
    func apply(_ change: Change, plugins: [String], inputs: [String]) throws(CommandRefusal) -> Outcome {
        try state.withLock { s throws(CommandRefusal) -> Outcome in
            var n = s.settings
            var outcome: Outcome
            switch change {
            case .zone(let name, let z?):
                try Self.check(input: z.input, among: inputs, tracked: n.tracked)
                outcome = try Self.put(z, name: name, into: &n.zones, sameShape: { $0.hasShape(of: z) && $0.input == z.input })
            case .line(let name, let l?):
                try Self.check(input: l.input, among: inputs, tracked: n.tracked)
                outcome = try Self.put(l, name: name, into: &n.lines, sameShape: { $0.hasShape(of: l) && $0.input == l.input })
            case .zone(let name, nil):
                guard n.zones.contains(where: { $0.name == name }) else { throw CommandRefusal(.notFound, "no zone named \(name)") }
                n.zones.removeAll { $0.name == name }
                outcome = Outcome(change: "removed", counts: nil)
            case .line(let name, nil):
                guard n.lines.contains(where: { $0.name == name }) else { throw CommandRefusal(.notFound, "no line named \(name)") }
                n.lines.removeAll { $0.name == name }
                outcome = Outcome(change: "removed", counts: nil)
            case .track(let plugin, let t?):
                guard plugins.contains(plugin) else {
                    throw CommandRefusal(.unprocessable, "no plugin \(plugin) in this run: its plugins are \(plugins.joined(separator: ", "))")
                }
                let had = n.tracked.contains { $0.plugin == plugin }
                if had { n.tracked = n.tracked.map { $0.plugin == plugin ? t : $0 } } else { n.tracked.append(t) }
                // A tracker set anew: its zones and lines go on from what the one before counted.
                outcome = Outcome(change: had ? "changed" : "added", counts: had ? "kept" : "reset")
            case .mask(let name, let m?):
                try Self.check(input: m.input, among: inputs, tracked: n.tracked, motion: motion)
                outcome = try Self.put(m, name: name, into: &n.masks, sameShape: { _ in true })
                outcome.counts = nil
            case .mask(let name, nil):
                guard n.masks.contains(where: { $0.name == name }) else { throw CommandRefusal(.notFound, "no mask named \(name)") }
                n.masks.removeAll { $0.name == name }
                outcome = Outcome(change: "removed", counts: nil)
            case .filter(let label, let input, let f?):
                try Self.check(input: input, among: inputs, tracked: n.tracked)
                if let at = n.filters.firstIndex(where: { $0.label == label && $0.input == input }) {
                    n.filters[at] = f
                    outcome = Outcome(change: "changed", counts: nil)
                } else {
                    guard n.filters.count < AnalyticsSettings.most else { throw CommandRefusal(.conflict, "this run has \(AnalyticsSettings.most) filters, the most: remove one first") }
                    n.filters.append(f)
                    outcome = Outcome(change: "added", counts: nil)
                }
            case .filter(let label, let input, nil):
                let gone = { (f: BoxFilter) in f.label == label && (input == nil || f.input == input) }
                guard n.filters.contains(where: gone) else { throw CommandRefusal(.notFound, "no filter of \(label)" + (input.map { " on \($0)" } ?? "")) }
                n.filters.removeAll(where: gone)
                outcome = Outcome(change: "removed", counts: nil)
            case .track(let plugin, nil):
                guard n.tracked.contains(where: { $0.plugin == plugin }) else { throw CommandRefusal(.notFound, "the boxes of \(plugin) are not followed") }
                // Masks stay with --motion (they keep motion out too).
                if n.tracked.count == 1 && !(n.zones.isEmpty && n.lines.isEmpty && (n.masks.isEmpty || motion) && n.filters.isEmpty) {
                    throw CommandRefusal(.conflict, "zones, lines, masks and filters work on tracks: remove them first (DELETE /zones/NAME, /lines/NAME, "
                                         + "/masks/NAME, /filters/LABEL), or follow another plugin's boxes")
                }
                n.tracked.removeAll { $0.plugin == plugin }
                outcome = Outcome(change: "removed", counts: nil)
            }
            for slot in s.slots {
                switch change {
                case .track(let plugin, _):
                    guard slot.plugin == plugin else { continue }
                    if case .track(_, let t?) = change { n.checkThresholds(plugin: t.plugin, confidence: slot.confidence) }
                    // A new tracker: its lines and zones go on from what the one before counted.
                    let counted = slot.tracked?.analytics.totals ?? kept?.totals(source: slot.source, plugin: slot.plugin) ?? CountTotals()
                    slot.replace(with: n.stage(plugin: slot.plugin, index: slot.pluginIndex, source: slot.source, live: slot.live,
                                               confidence: slot.confidence, kept: counted))
                case .zone, .line:
                    slot.tracked?.analytics.replace(zones: n.zones(on: slot.source), lines: n.lines(on: slot.source))
                case .mask, .filter:
                    slot.tracked?.analytics.replace(filters: n.filters(on: slot.source), masks: n.masks(on: slot.source))
                }
            }
            s.settings = n
            return outcome
        }
    }

    /// - Parameter motion: a mask's check with --motion on: it needs no track (it keeps motion out).
    private static func check(input: String?, among inputs: [String], tracked: [AnalyticsSpec.Tracked], motion: Bool = false) throws(CommandRefusal) {
        if let input, !inputs.contains(input) { throw CommandRefusal(.unprocessable, AnalyticsSettings.noSuchInput(input, among: inputs)) }
        if tracked.isEmpty && !motion {
            throw CommandRefusal(.conflict, "zones, lines, masks and filters work on tracks, and no plugin's boxes are followed: add a track first (PUT /tracks/PLUGIN, set_track)")
        }
    }

    /// Puts `item` in the place of the one called `name`, or adds it (up to `AnalyticsSettings.most`).
    private static func put<T>(_ item: T, name: String, into list: inout [T], sameShape: (T) -> Bool) throws(CommandRefusal) -> Outcome
        where T: Named {
        if let at = list.firstIndex(where: { $0.name == name }) {
            let kept = sameShape(list[at])
            list[at] = item
            return Outcome(change: "changed", counts: kept ? "kept" : "reset")
        }
        guard list.count < AnalyticsSettings.most else {
            throw CommandRefusal(.conflict, "this run has \(AnalyticsSettings.most) \(T.self == ZoneSettings.self ? "zones" : T.self == BoxMask.self ? "masks" : "lines"), "
                                 + "the most: remove one first")
        }
        list.append(item)
        return Outcome(change: "added", counts: "reset")
    }
}

/// Zones and lines, by name.
protocol Named { var name: String { get } }
extension ZoneSettings: Named {}
extension LineSettings: Named {}
extension BoxMask: Named {}
