import CVHostAnalytics
import CVHostCore

/// A reload of the config file while the run goes on (SIGHUP, `systemctl reload`): the settings
/// read anew (with the state file's changes over them, as at a start) are compared with the run's,
/// and what changed is applied as the commands apply it, said `by: reload`: inputs added, changed
/// (opened anew) or removed; tracks, zones, lines, masks and filters set or removed. What did not
/// change goes on untouched: its session, its sequence of frames, its counts. What cannot change
/// while running (the plugins, the outputs, --http, evidence folders...) is said on stderr to wait
/// for the next start. A config file with an error is refused before this (by the executable): the
/// run goes on as it was.
///
/// Two parts: `plan`, a pure list of steps from the two settings (unit-tested), and `apply`, which
/// makes them one by one (one that is refused is said, and the others are still made).
enum RunReload {
    /// One change a reload makes.
    enum Step: Equatable, CustomStringConvertible {
        case removeInput(String)
        case addInput(InputSpec, plugins: [String]?)
        /// Opened anew: it reads something else, or with other plugins.
        case changeInput(InputSpec, plugins: [String]?)
        case analytics(AnalyticsRules.Change)

        var description: String {
            switch self {
            case .removeInput(let id): "remove input \(id)"
            case .addInput(let spec, _): "add input \(spec.sourceID())"
            case .changeInput(let spec, _): "change input \(spec.sourceID())"
            case .analytics(let change): "\(change.removes ? "remove" : "set") \(change.kind.rawValue) \(change.name)"
            }
        }
    }

    /// An input as it runs: its name, what it reads, its plugins' names.
    struct RunningInput: Equatable {
        let id: String
        let spec: InputSpec
        let plugins: [String]
    }

    /// The steps from what runs (`running`, `now`) to what `new` says, in the order they are made:
    /// inputs removed, then added or changed; tracks set first (zones and lines watch them), then
    /// zones, lines, masks and filters removed and set, then the tracks no longer followed.
    /// - Parameter allPlugins: the run's plugins' names (an input added without a list gets them all).
    static func plan(_ new: RunSettings, running: [RunningInput], allPlugins: [String], now: AnalyticsSettings) -> [Step] {
        var steps: [Step] = []
        let wanted = new.inputs
        for source in running where !wanted.contains(where: { $0.sourceID() == source.id }) { steps.append(.removeInput(source.id)) }
        for spec in wanted {
            let id = spec.sourceID(), plugins = new.inputPlugins[id]
            guard let source = running.first(where: { $0.id == id }) else {
                steps.append(.addInput(spec, plugins: plugins))
                continue
            }
            let pluginsThen = plugins.map { p in allPlugins.filter { p.contains($0) } } ?? allPlugins
            if source.spec != spec || source.plugins != pluginsThen { steps.append(.changeInput(spec, plugins: plugins)) }
        }
        let next = new.analytics
        for t in next.tracked where !now.tracked.contains(t) { steps.append(.analytics(.track(plugin: t.plugin, t))) }
        for z in now.zones where !next.zones.contains(where: { $0.name == z.name }) { steps.append(.analytics(.zone(name: z.name, nil))) }
        for l in now.lines where !next.lines.contains(where: { $0.name == l.name }) { steps.append(.analytics(.line(name: l.name, nil))) }
        for z in next.zones where !now.zones.contains(z) { steps.append(.analytics(.zone(name: z.name, z))) }
        for l in next.lines where !now.lines.contains(l) { steps.append(.analytics(.line(name: l.name, l))) }
        for m in now.masks where !next.masks.contains(where: { $0.name == m.name }) { steps.append(.analytics(.mask(name: m.name, nil))) }
        for m in next.masks where !now.masks.contains(m) { steps.append(.analytics(.mask(name: m.name, m))) }
        for f in now.filters where !next.filters.contains(where: { $0.label == f.label && $0.input == f.input }) {
            steps.append(.analytics(.filter(label: f.label, input: f.input, nil)))
        }
        for f in next.filters where !now.filters.contains(f) { steps.append(.analytics(.filter(label: f.label, input: f.input, f))) }
        for t in now.tracked where !next.tracked.contains(where: { $0.plugin == t.plugin }) {
            steps.append(.analytics(.track(plugin: t.plugin, nil)))
        }
        return steps
    }

    /// - Parameter started: the settings the run started with (what cannot change is compared with them).
    static func apply(_ new: RunSettings, started: RunSettings, commands: LiveCommands) {
        guard let changes = commands.changes, let rules = commands.rules else { return }
        let later = RunOptions.needingRestart(new, started)
        if !later.isEmpty {
            Log.warning("reload: \(later.joined(separator: ", ")) changed in the config: that takes a restart; the rest is applied")
        }
        let running = commands.inputs.all.map { RunningInput(id: $0.id, spec: $0.spec, plugins: $0.runners.map(\.plugin.name)) }
        var done: [String] = []
        for step in plan(new, running: running, allPlugins: changes.pluginNames, now: rules.settings) {
            do {
                switch step {
                case .removeInput(let id): try changes.remove(id, by: "reload")
                case .addInput(let spec, let plugins): try changes.add(spec, plugins: plugins, by: "reload")
                case .changeInput(let spec, let plugins):
                    // Removed meanwhile (by a command): added.
                    try changes.add(spec, plugins: plugins, by: "reload", replacing: commands.inputs.named(spec.sourceID()))
                case .analytics(let change): _ = try commands.applyAnalytics(change, origin: "reload")
                }
                done.append(step.description)
            } catch let r as CommandRefusal {
                Log.error("reload: cannot \(step): \(r.message)")
            } catch {
                Log.error("reload: cannot \(step): \(error)")
            }
        }
        Log.info("reloaded: " + (done.isEmpty ? "nothing changed that a reload changes" : done.joined(separator: ", ")))
    }
}
