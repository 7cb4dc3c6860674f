import CVHostAnalytics
import CVHostCore

/// A reload of the config file while the run goes on (SIGHUP, `systemctl reload`): the settings
/// read anew (with the state file's changes over them, as at a start) are compared with the run's,
/// and what changed is applied as the commands apply it, said `by: reload`: inputs added, changed
/// (opened anew) or removed; tracks, zones, lines, masks and filters set or removed. What did not change goes on
/// untouched: its session, its sequence of frames, its counts. What cannot change while running
/// (the plugins, the outputs, --http, evidence folders...) is said on stderr to wait for the next
/// start. A config file with an error is refused before this (by the executable): the run goes on as it was.
enum RunReload {
    /// - Parameter started: the settings the run started with (what cannot change is compared with them).
    static func apply(_ new: RunSettings, started: RunSettings, commands: LiveCommands) {
        guard let changes = commands.changes, let rules = commands.rules else { return }
        var done: [String] = []
        let later = RunOptions.needingRestart(new, started)
        if !later.isEmpty {
            Log.warning("reload: \(later.joined(separator: ", ")) changed in the config: that takes a restart; the rest is applied")
        }
        // Inputs: by name, what is gone, what is new, what reads something else (or other plugins).
        let running = commands.inputs.all
        let wanted = new.inputs
        let allPlugins = changes.pluginNames
        for source in running where !wanted.contains(where: { $0.sourceID() == source.id }) {
            attempt("remove input \(source.id)", &done) { try changes.remove(source.id, by: "reload") }
        }
        for spec in wanted {
            let id = spec.sourceID()
            let plugins = new.inputPlugins[id]
            if let source = commands.inputs.named(id) {
                let pluginsNow = source.runners.map(\.plugin.name)
                guard source.spec != spec || pluginsNow != (plugins.map { p in allPlugins.filter { p.contains($0) } } ?? allPlugins) else { continue }
                attempt("change input \(id)", &done) { try changes.add(spec, plugins: plugins, by: "reload", replacing: source) }
            } else {
                attempt("add input \(id)", &done) { try changes.add(spec, plugins: plugins, by: "reload") }
            }
        }
        // Tracks first (zones and lines watch them), then zones and lines, then the tracks no longer followed.
        let now = rules.settings, next = new.analytics
        for t in next.tracked where !now.tracked.contains(t) {
            attempt("set track \(t.plugin)", &done) { _ = try commands.applyAnalytics(.track, name: t.plugin, .track(plugin: t.plugin, t), origin: "reload") }
        }
        for z in now.zones where !next.zones.contains(where: { $0.name == z.name }) {
            attempt("remove zone \(z.name)", &done) { _ = try commands.applyAnalytics(.zone, name: z.name, .zone(name: z.name, nil), origin: "reload") }
        }
        for l in now.lines where !next.lines.contains(where: { $0.name == l.name }) {
            attempt("remove line \(l.name)", &done) { _ = try commands.applyAnalytics(.line, name: l.name, .line(name: l.name, nil), origin: "reload") }
        }
        for z in next.zones where !now.zones.contains(z) {
            attempt("set zone \(z.name)", &done) { _ = try commands.applyAnalytics(.zone, name: z.name, .zone(name: z.name, z), origin: "reload") }
        }
        for l in next.lines where !now.lines.contains(l) {
            attempt("set line \(l.name)", &done) { _ = try commands.applyAnalytics(.line, name: l.name, .line(name: l.name, l), origin: "reload") }
        }
        for m in now.masks where !next.masks.contains(where: { $0.name == m.name }) {
            attempt("remove mask \(m.name)", &done) { _ = try commands.applyAnalytics(.mask, name: m.name, .mask(name: m.name, nil), origin: "reload") }
        }
        for m in next.masks where !now.masks.contains(m) {
            attempt("set mask \(m.name)", &done) { _ = try commands.applyAnalytics(.mask, name: m.name, .mask(name: m.name, m), origin: "reload") }
        }
        for f in now.filters where !next.filters.contains(where: { $0.label == f.label && $0.input == f.input }) {
            attempt("remove filter \(f.label)", &done) {
                _ = try commands.applyAnalytics(.filter, name: f.label, .filter(label: f.label, input: f.input, nil), origin: "reload")
            }
        }
        for f in next.filters where !now.filters.contains(f) {
            attempt("set filter \(f.label)", &done) {
                _ = try commands.applyAnalytics(.filter, name: f.label, .filter(label: f.label, input: f.input, f), origin: "reload")
            }
        }
        for t in now.tracked where !next.tracked.contains(where: { $0.plugin == t.plugin }) {
            attempt("remove track \(t.plugin)", &done) { _ = try commands.applyAnalytics(.track, name: t.plugin, .track(plugin: t.plugin, nil), origin: "reload") }
        }
        Log.info("reloaded: " + (done.isEmpty ? "nothing changed that a reload changes" : done.joined(separator: ", ")))
    }

    /// One change of a reload: done, or said on stderr with why (the others are still made).
    private static func attempt(_ what: String, _ done: inout [String], _ body: () throws -> Void) {
        do {
            try body()
            done.append(what)
        } catch let r as CommandRefusal {
            Log.error("reload: cannot \(what): \(r.message)")
        } catch {
            Log.error("reload: cannot \(what): \(error)")
        }
    }
}
