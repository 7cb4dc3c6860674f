import CVHostCore

/// The analytics of one plugin's boxes on one input: its boxes followed from frame to frame
/// (Tracker), and the tracks watched entering and leaving zones and crossing lines. Fed every
/// frame the plugin processed, in frame order, with the boxes of its results (none is a frame too:
/// it ages the tracks). Its zones and lines may be replaced while it runs (`replace`), between two frames.
public final class BoxAnalytics: @unchecked Sendable {
    // @unchecked Sendable: all state is behind `state`'s lock.
    private struct State {
        var tracker: Tracker
        var zones: [ZoneWatch] = []
        var lines: [LineWatch] = []
        /// The frame size zones and lines in fractions were made for.
        var size: (width: Int, height: Int)?
        /// Boxes reported that joined no track.
        var untracked = 0
        /// What boxes are ignored before they are tracked, and how many each reason refused.
        var filters: [BoxFilter] = []
        var masks: [BoxMask] = []
        var filtered: [String: Int] = [:]
        /// The time of the frame before (what frames between two are placed from).
        var lastTime: Double?
        /// The detector's usual jitter, in box heights, from the tracks whose own is measured: a
        /// new track's until its own is known (a track seen for a few frames may already be moving).
        var usualJitter: Double?
        /// The zones and lines as given (in fractions, when given so), before they are placed in a frame.
        var zoneSettings: [ZoneSettings]
        var lineSettings: [LineSettings]
    }
    private let state: Locked<State>
    /// The zones watched now, as given.
    public var zones: [ZoneSettings] { state.withLock { $0.zoneSettings } }
    /// The lines watched now, as given.
    public var lines: [LineSettings] { state.withLock { $0.lineSettings } }

    /// - Parameter kept: counts to go on from, of a run before this one (`--state`): a zone or line
    ///   of the name and shape they were counted on starts from them.
    /// - Parameter filters, masks: boxes ignored before they are tracked (BoxFilter, BoxMask).
    public init(tracker: TrackerSettings, zones: [ZoneSettings] = [], lines: [LineSettings] = [], filters: [BoxFilter] = [],
                masks: [BoxMask] = [], kept: CountTotals = CountTotals()) {
        var s = State(tracker: Tracker(tracker), zoneSettings: zones, lineSettings: lines)
        s.filters = filters
        s.masks = masks
        s.zones = zones.map { ZoneWatch($0, kept: kept.entries($0)) }
        s.lines = lines.map { LineWatch($0, kept: kept.crossings($0)) }
        state = Locked(s)
    }

    /// Puts `zones` and `lines` in place of those watched, between two frames. One of the same name
    /// and shape (`hasShape`) keeps its counts and what it knows of each track, with its other
    /// settings new; one moved (or a line turned round), or new, starts with none; one left out is
    /// no longer watched.
    public func replace(zones: [ZoneSettings], lines: [LineSettings]) {
        state.withLock { s in
            let size = s.size
            s.zones = zones.map { z in
                let placed = size.map { Self.placed(z, $0.width, $0.height) } ?? z
                guard let at = s.zoneSettings.firstIndex(where: { $0.name == z.name }), s.zoneSettings[at].hasShape(of: z),
                      var kept = s.zones.first(where: { $0.settings.name == z.name }) else { return ZoneWatch(placed) }
                kept.settings = placed
                return kept
            }
            s.lines = lines.map { l in
                let placed = size.map { Self.placed(l, $0.width, $0.height) } ?? l
                guard let at = s.lineSettings.firstIndex(where: { $0.name == l.name }), s.lineSettings[at].hasShape(of: l),
                      var kept = s.lines.first(where: { $0.settings.name == l.name }) else { return LineWatch(placed) }
                kept.settings = placed
                return kept
            }
            s.zoneSettings = zones
            s.lineSettings = lines
        }
    }

    /// Puts `filters` and `masks` in place of those used, from the next frame.
    public func replace(filters: [BoxFilter], masks: [BoxMask]) {
        state.withLock { s in
            s.filters = filters
            s.masks = masks
        }
    }

    /// What its lines and zones have counted, with their shapes (what a run after this one goes on from).
    public var totals: CountTotals {
        state.withLock { s in
            var t = CountTotals()
            for (settings, watch) in zip(s.lineSettings, s.lines) {
                t.lines[settings.name] = .init(settings, labels: watch.counts.mapValues { .init(in: $0.in, out: $0.out) })
            }
            for (settings, watch) in zip(s.zoneSettings, s.zones) {
                t.zones[settings.name] = .init(settings, labels: watch.entries.mapValues { .init(entered: $0) })
            }
            return t
        }
    }

    /// Its lines' and zones' counts made `kept`'s, where they have the shapes `kept` counted on
    /// (others are left as they are): an input opened anew goes on from the counts of the old.
    public func goOn(from kept: CountTotals) {
        state.withLock { s in
            for (i, settings) in s.lineSettings.enumerated() where kept.lines[settings.name]?.counts(settings) == true {
                s.lines[i].counts = kept.crossings(settings)
            }
            for (i, settings) in s.zoneSettings.enumerated() where kept.zones[settings.name]?.counts(settings) == true {
                s.zones[i].entries = kept.entries(settings)
            }
        }
    }

    /// Counts back to 0 (`reset_counts`): of the lines and zones named (nil: every one). Who is
    /// inside a zone now stays inside; what is known of each track stays.
    public func resetCounts(lines: Set<String>?, zones: Set<String>?) {
        state.withLock { s in
            for i in s.lines.indices where lines?.contains(s.lines[i].settings.name) ?? true { s.lines[i].resetCounts() }
            for i in s.zones.indices where zones?.contains(s.zones[i].settings.name) ?? true { s.zones[i].resetCounts() }
        }
    }

    /// What one frame gave: the track of each detection (nil: not a reported track), and the events, in order;
    /// and the events of each frame between it and the frame before (`between`), in their order.
    public struct Outcome: Sendable {
        public var trackIDs: [Int?]
        public var events: [AnalyticsEvent]
        public var betweenEvents: [[AnalyticsEvent]] = []
        /// The ids of the stationary tracks among `trackIDs`.
        public var stationary: Set<Int> = []
    }

    /// One frame's boxes at `time` (seconds, the frame's media time), the frame `width` x `height`.
    /// - Parameter between: the times of frames the plugin was not given since the frame before
    ///   (its `max_fps`), in order: zones and lines see each track there too, its box placed between
    ///   its filtered boxes of the two frames around (a smoother's estimate: never past what the
    ///   detector saw, so a box that turns back before a line is not counted across it), before
    ///   this frame's boxes. A track seen in only one of the two is not placed between them.
    /// - Parameter motion: what the host's motion saw of this frame and the frames since the one
    ///   before (nil: motion is not looked for): a stationary track no motion touches is held where
    ///   it is (the zones see it there), and still time does not count against `lost` (Tracker).
    public func update(_ detections: [Detection], time: Double, width: Int, height: Int, between: [Double] = [],
                       motion: MotionLook? = nil) -> Outcome {
        state.withLock { s in
            if s.size == nil || s.size! != (width, height) {
                // The first frame, or the frame's size changed (a camera's new stream): zones and
                // lines in fractions are placed in its pixels; every track's state and every count is kept.
                s.size = (width, height)
                for i in s.zones.indices { s.zones[i].settings = Self.placed(s.zoneSettings[i], width, height) }
                for i in s.lines.indices { s.lines[i].settings = Self.placed(s.lineSettings[i], width, height) }
            }
            // Each reported track's filtered box at the frame before, where it was there (seen or held).
            let before = s.lastTime
            let placedFrom = Dictionary(uniqueKeysWithValues: s.tracker.tracks.filter { $0.id != 0 && $0.presentTime == before }
                .map { ($0.id, $0.filter.box) })
            // Boxes a filter or a mask refuses are never tracked (counted by reason).
            var followed: [Int] = []
            for (i, d) in detections.enumerated() {
                if let why = Self.refusal(d, s, width: width, height: height) { s.filtered[why, default: 0] += 1 } else { followed.append(i) }
            }
            let step = s.tracker.update(followed.map { detections[$0] }, time: time, motion: motion)
            s.untracked += step.untracked
            s.lastTime = time
            for (track, _) in step.seen {
                guard let d = track.jitter.deviation, track.filter.box.height > 0 else { continue }
                let share = d / track.filter.box.height
                s.usualJitter = s.usualJitter.map { $0 + (share - $0) * 0.05 } ?? share
            }
            // The tracks there this frame: seen, or held where they are.
            let present = step.seen.map(\.track) + step.held
            // One list of events for each frame between (none where it lies outside the two frames' times).
            let betweenEvents = between.map { t -> [AnalyticsEvent] in
                guard let before, t > before, t < time else { return [] }
                var events: [AnalyticsEvent] = []
                let f = (t - before) / (time - before)
                for track in present {
                    guard let from = placedFrom[track.id] else { continue }
                    Self.see(track, box: from.interpolated(to: track.filter.box, f), time: t, &s, into: &events)
                }
                return events
            }
            var events = step.started.map(AnalyticsEvent.trackStarted)
            events += step.stationary.map { AnalyticsEvent.trackStationary($0.track, stationary: $0.stationary, time: time) }
            // Zones and lines see each track's filtered box (steadier than the detector's) and its voted label.
            for track in present { Self.see(track, box: track.filter.box, time: time, &s, into: &events) }
            for t in step.ended { Self.end(t, reason: "lost", &s, &events) }
            var trackIDs = [Int?](repeating: nil, count: detections.count)
            for (k, i) in followed.enumerated() { trackIDs[i] = step.trackOf[k] }
            return Outcome(trackIDs: trackIDs, events: events, betweenEvents: betweenEvents,
                           stationary: Set(step.seen.filter { $0.track.stationary }.map(\.track.id)))
        }
    }

    /// Why `d` is not to be tracked (a filter's reason, or `mask`), nil when it is.
    private static func refusal(_ d: Detection, _ s: State, width: Int, height: Int) -> String? {
        if let filter = s.filters.first(where: { $0.label == d.label }) ?? s.filters.first(where: { $0.label == BoxFilter.everyLabel }),
           let why = filter.refusal(d, width: width, height: height) { return why }
        return s.masks.contains { $0.covers(d.box, width: width, height: height) } ? BoxMask.reason : nil
    }

    /// The masks boxes are ignored in (the live view draws them).
    public var masks: [BoxMask] { state.withLock { $0.masks } }

    /// What the analytics count now, for /metrics.
    public struct Counts: Sendable {
        public var tracksStarted = 0
        public var tracksActive = 0
        /// Boxes reported that joined no track (under the tracker's thresholds).
        public var untracked = 0
        /// Boxes a filter or a mask kept from the tracker, by reason (`BoxFilter.reasons`).
        public var filtered: [String: Int] = [:]
        /// Per line and label: crossings in and out.
        public var crossings: [(line: String, label: String, in: Int, out: Int)] = []
        /// Per zone and label: tracks inside now, and entries so far.
        public var zones: [(zone: String, label: String, inside: Int, entered: Int)] = []
    }

    public var counts: Counts {
        state.withLock { s in
            var c = Counts()
            c.tracksStarted = s.tracker.reported
            c.tracksActive = s.tracker.tracks.filter { $0.id != 0 }.count
            c.untracked = s.untracked
            c.filtered = s.filtered
            for l in s.lines {
                for (label, n) in l.counts.sorted(by: { $0.key < $1.key }) { c.crossings.append((l.settings.name, label, n.in, n.out)) }
            }
            for z in s.zones {
                for label in Set(z.counts.keys).union(z.entries.keys).sorted() {
                    c.zones.append((z.settings.name, label, z.counts[label] ?? 0, z.entries[label] ?? 0))
                }
            }
            return c
        }
    }

    /// The input ended: every track ends, and the run's totals are said (analytics.summary).
    public func finish() -> [AnalyticsEvent] {
        state.withLock { s in
            var events: [AnalyticsEvent] = []
            for t in s.tracker.finish() { Self.end(t, reason: "input_ended", &s, &events) }
            events.append(.summary(tracksStarted: s.tracker.reported, untracked: s.untracked, filtered: s.filtered, lines: s.lines, zones: s.zones))
            return events
        }
    }

    /// Zones and lines see `track` at `box` at `time`.
    private static func see(_ track: Track, box: Box, time: Double, _ s: inout State, into events: inout [AnalyticsEvent]) {
        let jitter = track.jitter.deviation ?? s.usualJitter.map { $0 * box.height }
        for i in s.zones.indices { s.zones[i].see(track: track.id, label: track.label, box: box, jitter: jitter, time: time, into: &events) }
        // Its speed so far, from the first measured zone it is in (said on a line it crosses there).
        // A stationary track is never counted on a line (a parked car's box astride one): they
        // see it again once it moves, from the side it was on.
        guard !track.stationary else { return }
        let speed = s.zones.lazy.compactMap { z in
            z.speed(track: track.id, box: box, time: time).map { LineWatch.Speed(value: $0, unit: z.settings.speedUnit, zone: z.settings.name) }
        }.first
        for i in s.lines.indices {
            s.lines[i].see(track: track.id, label: track.label, box: box, jitter: jitter, speed: speed, into: &events)
        }
    }

    private static func end(_ t: Track, reason: String, _ s: inout State, _ events: inout [AnalyticsEvent]) {
        for i in s.zones.indices { s.zones[i].end(track: t.id, time: t.lastTime, inputEnded: reason == "input_ended", into: &events) }
        for i in s.lines.indices { s.lines[i].end(track: t.id) }
        events.append(.trackEnded(t, reason: reason))
    }

    /// The zone with its points in the frame's pixels (the same settings otherwise).
    static func placed(_ z: ZoneSettings, _ w: Int, _ h: Int) -> ZoneSettings {
        guard z.fractions else { return z }
        var p = z
        p.polygon = Polygon(z.polygon.points.map { $0.scaled(w, h) })
        p.fractions = false
        return p
    }

    static func placed(_ l: LineSettings, _ w: Int, _ h: Int) -> LineSettings {
        guard l.fractions else { return l }
        var p = l
        p.segment = Segment(l.segment.a.scaled(w, h), l.segment.b.scaled(w, h))
        p.fractions = false
        return p
    }
}
