import CVHostAnalytics
import CVHostCore
import CVHostLines
import Foundation

/// The run's counts kept and set back to 0: every 2 s (and at the stop) what the lines and zones
/// counted goes into the kept totals (`--state`: KeptTotals), and `reset_counts` (stdin, `POST
/// /analytics/reset`) or the daily reset (`--reset-counts-at HH:MM`, local time) sets them to 0,
/// each said as `analytics.changed` (change `reset`) for every line and zone it set back.
final class TotalsKeeper: Sendable {
    private let kept: KeptTotals?
    private let rules: AnalyticsRules
    private let lines: RunLines
    /// The inputs the run has now (those not at work too: a camera down).
    private let sources: @Sendable () -> [String]
    private let daily: DailyTime?
    private let wake = ConditionLock()
    private let state = Locked<(stopping: Bool, stopped: Bool)>((false, false))
    /// When the counts were last set to 0 (kept with the totals; else this run's start).
    private let lastReset: Locked<Double>

    static let interval = 2.0

    init(kept: KeptTotals?, rules: AnalyticsRules, lines: RunLines, sources: @escaping @Sendable () -> [String], daily: DailyTime?) {
        self.kept = kept
        self.rules = rules
        self.lines = lines
        self.sources = sources
        self.daily = daily
        // Kept counts older than the last reset's time were set back before the run (KeptTotals.resetIfOlder).
        lastReset = Locked(kept?.lastReset ?? Date().timeIntervalSince1970)
    }

    /// Starts the thread that keeps the counts (none is needed without --state or a daily reset).
    func start() {
        guard kept != nil || daily != nil else { return }
        SystemThread.start("cvhost.totals") { [self] in
            while true {
                let stopping = wake.withLock { () -> Bool in
                    if !state.withLock({ $0.stopping }) {
                        wake.wait(untilMonotonicNs: HostClock.monotonicNs() + UInt64(Self.interval * 1e9))
                    }
                    return state.withLock { $0.stopping }
                }
                if stopping { break }
                resetIfDue(now: Date())
                save()
            }
            wake.withLock {
                state.withLock { $0.stopped = true }
                wake.broadcast()
            }
        }
    }

    /// Stops the thread and keeps the counts as they are at the end (after every input's last frame).
    func stop() {
        wake.withLock {
            state.withLock { $0.stopping = true }
            wake.broadcast()
            while !state.withLock({ $0.stopped }) && (kept != nil || daily != nil) { wake.wait() }
        }
        save()
    }

    /// What the plugins at work have counted, into the kept totals, written when they changed.
    func save() {
        guard let kept else { return }
        kept.update(rules.totals(), sources: Set(sources()))
        kept.write()
    }

    /// Counts back to 0: of input `source` (nil: every input), of the lines and zones named (both
    /// nil: every one); `by`: stdin, http or schedule. - Returns: the lines and zones set back.
    @discardableResult
    func reset(source: String?, lines names: Set<String>?, zones zoneNames: Set<String>?, by: String) -> (lines: [String], zones: [String]) {
        let done = rules.resetCounts(source: source, lines: names, zones: zoneNames)
        if source == nil && names == nil && zoneNames == nil {
            let now = Date().timeIntervalSince1970
            lastReset.withLock { $0 = now }
            kept?.reset(at: now)
        } else {
            kept?.reset(source: source, lines: names, zones: zoneNames)
        }
        let settings = rules.settings
        for (kind, name) in done.lines.map({ (AnalyticsJSON.Kind.line, $0) }) + done.zones.map({ (AnalyticsJSON.Kind.zone, $0) }) {
            self.lines.writeWhileRunning(AnalyticsJSON.changedLine(kind, name: name, change: "reset", counts: "reset", in: settings, source: source, by: by))
        }
        save()
        return done
    }

    /// The daily reset, when its time has come since the last reset.
    private func resetIfDue(now: Date) {
        guard let daily else { return }
        let due = daily.latest(atOrBefore: now)
        guard lastReset.withLock({ $0 }) < due.timeIntervalSince1970 else { return }
        Log.info("the counts are set back to 0 (--reset-counts-at \(daily))")
        reset(source: nil, lines: nil, zones: nil, by: "schedule")
    }
}
