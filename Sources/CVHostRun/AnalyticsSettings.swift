import CVHostAnalytics
import CVHostCore

/// `--track`, `--zone`, `--line`: whose boxes are followed across frames, and the zones and
/// lines their tracks are watched in (CVHostAnalytics). Checked before anything runs: a zone or a
/// line that cannot be is a UsageError naming it (and, from a config file, its file and line).
public struct AnalyticsSettings: Sendable {
    public var tracked: [AnalyticsSpec.Tracked] = []
    public var zones: [ZoneSettings] = []
    public var lines: [LineSettings] = []
    /// `--filter`, `--mask`: the boxes ignored before they are tracked.
    public var filters: [BoxFilter] = []
    public var masks: [BoxMask] = []
    /// Zones and lines set aside at start ("zone bay"): they watch an input removed while an earlier run went on.
    public private(set) var setAside: [String] = []

    public init() {}

    /// - Parameters:
    ///   - inputs: the run's inputs (their source ids), when known: a zone or line naming another is
    ///     refused, unless that one is in `removed`.
    ///   - removed: inputs removed while an earlier run went on (--state): their zones and lines are
    ///     set aside, each said, so that a restart never fails for a change made before it.
    ///   - kept: the state file (--state), whose tracks, zones, lines, masks and filters are applied
    ///     over the texts' (an entry replaces what has its name, null removes it).
    ///   - origin: where the config file gives a value of a key ("FILE:LINE: zone"), if it does.
    ///   - motion: motion is looked for (--motion), which masks keep out too: they need no --track then.
    public init(track: [String], zones: [String], lines: [String], filters: [String] = [], masks: [String] = [], inputs: [String]? = nil,
                removed: Set<String> = [], kept: RunStateFile? = nil, motion: Bool = false,
                origin: (_ key: String, _ value: String) -> String? = { _, _ in nil }) throws(UsageError) {
        func parsed<T>(_ key: String, _ values: [String], _ parse: (String) throws(AnalyticsSpec.Problem) -> T) throws(UsageError) -> [T] {
            var out: [T] = []
            for v in values {
                do { out.append(try parse(v)) } catch {
                    // From a config file: its file, line and key in place of the flag.
                    guard let at = origin(key, v) else { throw UsageError(error.description) }
                    let flag = "--\(key) "
                    throw UsageError("\(at): " + (error.description.hasPrefix(flag) ? String(error.description.dropFirst(flag.count)) : error.description))
                }
            }
            return out
        }
        // Every track is checked against every zone and line on every frame: a bound keeps a
        // frame's analytics within reach (with at most 1000 points a zone), and the parsing short.
        func bound(_ counts: [(String, Int)]) throws(UsageError) {
            for (flag, count) in counts where count > Self.most {
                throw UsageError("\(flag) is given \(count) times: at most \(Self.most) (each track is checked against each on every frame)")
            }
        }
        try bound([("--zone", zones.count), ("--line", lines.count), ("--filter", filters.count), ("--mask", masks.count)])
        tracked = try parsed("track", track, AnalyticsSpec.tracked)
        self.zones = try parsed("zone", zones, AnalyticsSpec.zone)
        self.lines = try parsed("line", lines, AnalyticsSpec.line)
        self.filters = try parsed("filter", filters, AnalyticsSpec.filter)
        self.masks = try parsed("mask", masks, AnalyticsSpec.mask)
        let keptRules = kept?.current
        keptRules?.apply(to: &self)
        try bound([("--zone", self.zones.count), ("--line", self.lines.count), ("--filter", self.filters.count), ("--mask", self.masks.count)])
        // Where a refusal says a rule comes from: the state file, the config file (its file and line), or the command line.
        func source(_ key: String, _ name: String) -> String {
            if let keptRules, keptRules.keeps(AnalyticsJSON.Kind(rawValue: key)!, name) { return "\(kept!.path): \(key) \(name)" }
            let texts = ["zone": zones, "line": lines, "mask": masks, "filter": filters, "track": track][key] ?? []
            let text = texts.first { $0.hasPrefix(name + (key == "filter" ? ":" : "=")) } ?? name
            return origin(key, text) ?? "--\(key) \(text)"
        }
        if let inputs {
            // Of an input removed while running (and kept so by --state): set aside, said.
            var aside: [String] = []
            func gone(_ key: String, _ name: String, _ input: String?) -> Bool {
                guard let input, !inputs.contains(input), removed.contains(input) else { return false }
                Log.warning("--\(key) \(name) watches input \(input), which was removed while cvhost ran (--state): it is set aside "
                            + "(add the input again, or remove the \(key) with DELETE /\(key)s/\(name))")
                aside.append("\(key) \(name)")
                return true
            }
            var keptZones = self.zones, keptLines = self.lines
            keptZones.removeAll { gone("zone", $0.name, $0.input) }
            keptLines.removeAll { gone("line", $0.name, $0.input) }
            self.zones = keptZones
            self.lines = keptLines
            setAside = aside
            let named = self.zones.map { ("zone", $0.name, $0.input) } + self.lines.map { ("line", $0.name, $0.input) }
                + self.masks.map { ("mask", $0.name, $0.input) } + self.filters.map { ("filter", $0.label, $0.input) }
            for (key, name, input) in named {
                guard let input, !inputs.contains(input) else { continue }
                throw UsageError("\(source(key, name)): \(Self.noSuchInput(input, among: inputs))")
            }
        }
        if tracked.isEmpty && !(self.zones.isEmpty && self.lines.isEmpty) {
            throw UsageError("--zone and --line watch tracks: add --track PLUGIN, the plugin whose boxes are followed (--track detect)")
        }
        if tracked.isEmpty && !self.filters.isEmpty {
            throw UsageError("--filter keeps boxes from the tracker: add --track PLUGIN, the plugin whose boxes are followed (--track detect)")
        }
        if tracked.isEmpty && !motion && !self.masks.isEmpty {
            throw UsageError("--mask keeps boxes from the tracker and motion from --motion: add --track PLUGIN (the plugin whose boxes are followed) or --motion")
        }
        let filterKeys = self.filters.map { "\($0.label) input=\($0.input ?? "*")" }
        for (flag, names) in [("--track", tracked.map(\.plugin)), ("--zone", self.zones.map(\.name)), ("--line", self.lines.map(\.name)),
                              ("--mask", self.masks.map(\.name)), ("--filter", filterKeys)] {
            if let twice = names.first(where: { n in names.filter { $0 == n }.count > 1 }) {
                throw UsageError("\(flag) \(twice) is given twice: each needs a name of its own")
            }
        }
    }

    /// Says once, at start, where a tracked plugin reports boxes that can start no track: `high`
    /// given above the plugin's own `confidence`.
    func checkThresholds(plugin: String, confidence: Double?) {
        guard let t = tracked.first(where: { $0.plugin == plugin }), let confidence, t.settings.highGiven, t.settings.high > confidence else { return }
        Log.warning("--track \(plugin): boxes \(plugin) reports between its confidence=\(confidence) and high=\(t.settings.high) start no track "
                    + "(counted as untracked_results): lower high (--track \(plugin):high=\(confidence)) or raise the plugin's confidence")
    }

    /// The most zones, and the most lines, a run may have.
    public static let most = 100

    /// Why a zone's or line's `input=` cannot be: the run has no such input.
    static func noSuchInput(_ input: String, among inputs: [String]) -> String {
        "input=\(input): this run has no input called \(input) (its inputs: \(inputs.joined(separator: ", ")); name one with --input NAME=...)"
    }

    /// Inputs zones and lines name that the run does not have: said before anything runs.
    func unknownInputs(_ sources: [String]) -> [String] {
        (zones.compactMap(\.input) + lines.compactMap(\.input)).filter { !sources.contains($0) }
    }

    /// The zones watched on input `source`: its own and those of every input.
    func zones(on source: String) -> [ZoneSettings] { zones.filter { $0.input == nil || $0.input == source } }

    /// The lines watched on input `source`: its own and those of every input.
    func lines(on source: String) -> [LineSettings] { lines.filter { $0.input == nil || $0.input == source } }

    /// The filters of input `source`: for each label, its own input's before every input's.
    func filters(on source: String) -> [BoxFilter] {
        filters.filter { $0.input == source } + filters.filter { f in f.input == nil && !filters.contains { $0.input == source && $0.label == f.label } }
    }

    /// The masks of input `source`: its own and those of every input.
    func masks(on source: String) -> [BoxMask] { masks.filter { $0.input == nil || $0.input == source } }

    /// The analytics stage of the plugin called `plugin` on input `source` (`live`: a camera or a
    /// network stream; `confidence`: the plugin's own threshold, when it has one), or nil when its
    /// boxes are not followed; its lines and zones go on from `kept`'s counts where they have their shapes.
    func stage(plugin: String, index: Int, source: String, live: Bool, confidence: Double?, kept: CountTotals = CountTotals()) -> TrackedResults? {
        guard let t = tracked.first(where: { $0.plugin == plugin }) else { return nil }
        let tracker = t.settings.following(confidence: confidence)
        let analytics = BoxAnalytics(tracker: tracker, zones: zones(on: source), lines: lines(on: source), filters: filters(on: source),
                                     masks: masks(on: source), kept: kept)
        return TrackedResults(analytics: analytics, source: source, plugin: plugin, pluginIndex: index, live: live, high: tracker.high,
                              lost: tracker.lost)
    }
}
