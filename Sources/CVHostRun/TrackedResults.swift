import CVHostAnalytics
import CVHostCore
import CVHostLines
import CVHostPlugins

/// The analytics stage of one tracked plugin on one input (`--track PLUGIN`): each frame's
/// results that carry a box (`bounds` in pixels) are followed from frame to frame (BoxAnalytics);
/// those of a reported track get its id (`track_id`, first in their data), and the tracks', zones'
/// and lines' events are written after the frame's results, in the plugin's name. Frames the plugin
/// was not given (its `max_fps`) are seen by the zones and lines too, with each track placed
/// between the frames around them (BoxAnalytics.update's `between`): their events are written
/// before the next frame's results, with their own frame's seq and time.
final class TrackedResults: @unchecked Sendable {
    // @unchecked Sendable: its slot hands it one frame at a time (the runner's sequencer's lock).
    let analytics: BoxAnalytics
    private let source: String, plugin: String, pluginIndex: Int
    /// The last frame it was handed (its time alone): what the events that close it are stamped with.
    private let last = Locked<ProcessedFrame?>(nil)
    /// The time the analytics count in (the frames' media time, kept monotonic).
    private let clock: Locked<AnalyticsClock>
    /// The tracker's threshold to start a track, and the best score of the boxes seen while none
    /// started (said once when boxes keep coming and none can start a track).
    private let high: Double
    private let unstarted = Locked<(best: Double, said: Bool)>((0, false))
    /// Whether the plugin gets the detections it asks for (said once when it does not).
    private let rate = Locked(DetectionRateWatch(mostPassedOver: FrameResults.mostPassedOver))
    /// The tracker's `lost`, and the last processed frame's time and sequence: a plugin whose
    /// frames come further apart than `lost` ends its tracks between them (said once).
    private let lost: Double
    private let lastProcessed = Locked<(time: Double, sequence: UInt64, said: Bool)?>(nil)
    /// Boxes that start no track before that is said.
    static let unstartedBoxesSaid = 20

    /// - Parameter live: the input is a camera or a network stream (its timestamps' jumps are
    ///   measured against arrival on this host).
    /// - Parameter high: the tracker's threshold to start a track.
    init(analytics: BoxAnalytics, source: String, plugin: String, pluginIndex: Int, live: Bool, high: Double = 0.4, lost: Double = 1.5) {
        self.high = high
        self.lost = lost
        self.analytics = analytics
        clock = Locked(AnalyticsClock(live: live))
        self.source = source
        self.plugin = plugin
        self.pluginIndex = pluginIndex
    }

    /// One frame's results, with the frames passed over before it (the zones and lines see them
    /// first): its results get their tracks' ids, the events come after them.
    func frame(_ results: inout FrameResults) {
        let lines = results.lines, frame = results.frame, between = results.passedOver
        var detections: [Detection] = [], at: [Int] = []
        for (i, line) in lines.enumerated() {
            guard let result = line.result, let d = Detection(result) else { continue }
            detections.append(d)
            at.append(i)
        }
        // Every frame's media time, those passed over first: a file's own clock, a live source's from
        // its start (what `lost` and `dwell` count in), never running backwards; the first jump
        // among them said (input.time_jumped), if it is the input's first.
        let (times, jump) = clock.withLock { c in
            let before = c.jumps
            let timed = (between + [frame]).map { c.time(ptsNs: $0.presentationTimeNs, wallNs: $0.captureTimeNs) }
            return (timed.map(\.time), before == 0 ? timed.lazy.compactMap(\.jump).first : nil)
        }
        let betweenTimes = Array(times.dropLast()), time = times.last!
        let look = motionLook(frames: between + [frame], times: times)
        var jumped: [AnalyticsEvent] = []
        if let jump {
            Log.warning("the timestamps jumped from \(Double(jump.fromNs) / 1e9) s to \(Double(jump.toNs) / 1e9) s (a reconnection, or a camera's "
                        + "clock): tracks, zones and lines go on in the time that passed here (input.time_jumped; said for the first jump only)",
                        source: source)
            jumped.append(AnalyticsEvent.timeJumped(fromNs: jump.fromNs, toNs: jump.toNs))
        }
        let outcome = analytics.update(detections, time: time, width: frame.width, height: frame.height, between: betweenTimes, motion: look)
        sayIfNoTrackStarts(detections)
        sayIfBehind(frame, time: time, passedOver: between.count)
        sayIfFartherThanLost(frame, time: time, still: look?.stillSeconds ?? 0)
        var out = lines
        for (k, id) in outcome.trackIDs.enumerated() {
            if let id, let tagged = out[at[k]].with(trackID: id, stationary: outcome.stationary.contains(id)) { out[at[k]] = tagged }
        }
        last.withLock { $0 = frame.withoutPicture }
        let passed = zip(between, outcome.betweenEvents).flatMap { f, events in events.map { line($0, f) } }
        results.lines = passed + out + (jumped + outcome.events).map { line($0, frame) }
    }

    /// What the host's motion saw of the frame and of the frames since the one processed before it
    /// (`frames`, the frame last, at `times`): the seconds that ended in a still frame, and where the
    /// frame moved. Nil when motion is not looked for.
    private func motionLook(frames: [ProcessedFrame], times: [Double]) -> MotionLook? {
        guard let motion = frames.last?.motion else { return nil }
        var still = 0.0
        var before = lastProcessed.withLock { $0?.time }
        for (f, t) in zip(frames.dropLast(), times) {
            if let before, f.motion?.active == false { still += max(0, t - before) }
            before = t
        }
        return MotionLook(stillSeconds: still, regions: motion.regions.map {
            Box(x: Double($0.x), y: Double($0.y), width: Double($0.width), height: Double($0.height))
        })
    }

    /// A plugin whose boxes all fall under `high` counts nothing, silently but for
    /// `untracked_results`: said once, with the fix, when `unstartedBoxesSaid` boxes came and
    /// started no track.
    private func sayIfNoTrackStarts(_ detections: [Detection]) {
        guard !detections.isEmpty else { return }
        let say = unstarted.withLock { u -> Double? in
            guard !u.said else { return nil }
            u.best = max(u.best, detections.map(\.confidence).max() ?? 0)
            let c = analytics.counts
            guard c.tracksStarted == 0, c.untracked >= Self.unstartedBoxesSaid else { return nil }
            u.said = true
            return u.best
        }
        guard let best = say else { return }
        Log.warning("--track \(plugin): \(Self.unstartedBoxesSaid) boxes and no track: the best score so far is \(JSONObject.number(best, decimals: 2)), "
                    + "under high=\(JSONObject.number(high, decimals: 2)), the score a box needs to start a track; nothing is counted. "
                    + "Lower it: --track \(plugin):high=\(JSONObject.number(max(0.01, (best * 0.9 * 100).rounded(.down) / 100), decimals: 2))",
                    source: source)
    }

    /// A plugin that falls behind its input (frames dropped as late before it sees them) counts
    /// what it sees and misses the rest: said once, with what it got, what it asked, and the fix.
    private func sayIfBehind(_ frame: ProcessedFrame, time: Double, passedOver: Int) {
        guard let short = rate.withLock({ $0.processed(sequence: frame.sequence, time: time, passedOver: passedOver) }) else { return }
        let keepsUp = max(0.1, (short.got * 0.9 * 10).rounded(.down) / 10)
        Log.warning("--track \(plugin): the plugin processed \(JSONObject.number(short.got, decimals: 1)) frames a second where "
                    + "\(JSONObject.number(short.asked, decimals: 1)) were asked of it (the rest came while it was busy and were dropped as late): "
                    + "tracks, zones and lines may miss what happens between the frames it sees. Ask for what it keeps up with "
                    + "(max_fps=\(JSONObject.number(keepsUp, decimals: 1)) on --plugin \(plugin)), give it fewer inputs, or lighter work",
                    source: source)
    }

    /// A plugin that sees frames further apart than the tracker's `lost` (a low `max_fps`, or too
    /// slow for its input) ends every track between two of them: each object is a new track, counted
    /// again. Said once, with the gap and the fix; a gap of the input's own (a reconnection, a file's
    /// pause: no frame between) is not the plugin's, nor a still one (`still` seconds of it: a plugin
    /// gated on motion, which the tracker holds its tracks through).
    private func sayIfFartherThanLost(_ frame: ProcessedFrame, time: Double, still: Double) {
        let gap = lastProcessed.withLock { last -> Double? in
            defer { last = (time, frame.sequence, last?.said ?? false) }
            guard let before = last, !before.said, frame.sequence > before.sequence + 1, time - before.time - still > lost else { return nil }
            last?.said = true
            return time - before.time - still
        }
        guard let gap else { return }
        let wanted = (gap * 1.5 * 10).rounded(.up) / 10
        Log.warning("--track \(plugin): \(JSONObject.number(gap, decimals: 1)) s passed between two frames the plugin processed, more than the "
                    + "tracker keeps a track unseen (lost=\(JSONObject.number(lost, decimals: 1))): each object becomes a new track and is counted "
                    + "again. Keep tracks longer (--track \(plugin):lost=\(JSONObject.number(wanted, decimals: 1))) or ask for more frames (max_fps on --plugin \(plugin))",
                    source: source)
    }

    /// After the input's last frame, or when it is replaced: what is still open, closed (stamped
    /// with the last frame it was handed).
    func finish() -> [OutputLine] {
        let frame = last.withLock { $0 }
        return analytics.finish().map { line($0, frame) }
    }

    /// What it follows and watches, for session.started (and the live view, which draws the zones and
    /// lines), each line with the counts it starts from (`counts`: kept from a run before, `--state`).
    var summary: JSONObject {
        var o = JSONObject()
        o.set("zones", array: analytics.zones.map { AnalyticsJSON.json($0) })
        let counts = analytics.counts
        o.set("lines", array: analytics.lines.map { l in
            var j = AnalyticsJSON.json(l)
            j.set("counts", object: AnalyticsJSON.lineCounts(l.name, counts))
            return j
        })
        // Where boxes are ignored (the live view draws them).
        o.set("masks", array: analytics.masks.map { AnalyticsJSON.json($0) })
        return o
    }

    /// Its counts for a Prometheus scrape: tracks, crossings per line, label and direction, and
    /// zones' occupancy and entries per label. Labels: source, plugin, plugin_index, and line or zone, label.
    func expose(into p: inout PrometheusExposition) {
        let c = analytics.counts
        let l = [("source", source), ("plugin", plugin), ("plugin_index", String(pluginIndex))]
        p.counter("cvhost_tracks_started_total", "Tracks reported (--track): objects followed across frames.", l, UInt64(c.tracksStarted))
        p.gauge("cvhost_tracks_active", "Tracks followed now (seen, or lost for less than `lost` seconds).", l, Double(c.tracksActive))
        p.counter("cvhost_untracked_results_total", "Boxes the plugin reported that joined no track (under the tracker's thresholds).", l, UInt64(c.untracked))
        for reason in BoxFilter.reasons {
            p.counter("cvhost_filtered_results_total", "Boxes kept from the tracker by --filter (by the threshold) or --mask (mask).",
                      l + [("reason", reason)], UInt64(c.filtered[reason] ?? 0))
        }
        for x in c.crossings {
            for (direction, n) in [("in", x.in), ("out", x.out)] {
                p.counter("cvhost_line_crossings_total", "Tracks that crossed a line (--line), by label and direction.",
                          l + [("line", x.line), ("label", x.label), ("direction", direction)], UInt64(n))
            }
        }
        for z in c.zones {
            p.gauge("cvhost_zone_occupancy", "Tracks inside a zone (--zone) now, by label.", l + [("zone", z.zone), ("label", z.label)], Double(z.inside))
            p.counter("cvhost_zone_entries_total", "Tracks that came into a zone, by label.", l + [("zone", z.zone), ("label", z.label)],
                      UInt64(z.entered))
        }
    }

    private func line(_ event: AnalyticsEvent, _ frame: ProcessedFrame?) -> OutputLine {
        var o = JSONObject.envelope(event: event.kind.rawValue, source: source, plugin: plugin, pluginIndex: pluginIndex, seq: frame?.sequence,
                                    tsNs: frame?.captureTimeNs ?? HostClock.wallNs(), ptsNs: frame?.presentationTimeNs)
        o.set("data", object: event.data)
        o.track = event.track
        o.label = event.label
        return o.line()
    }
}

extension Detection {
    /// The box of a result, if it has one: `bounds` {x, y, width, height}; its label (else the
    /// result's type) and confidence (else 1), as the validator noted them. A result that has a
    /// `track_id` of its own is left alone, and so is a box that is no box in any frame: a side of
    /// none or past `ResultFields.maxCoordinate` (refused when the plugin emitted it; here too,
    /// for a result that came another way: its x + width could overflow, and it would start a track
    /// of its own on every frame).
    package init?(_ result: OutputLine.Result) {
        let f = result.fields
        guard !f.hasTrackID, let b = f.bounds, b.width > 0, b.height > 0,
              [b.x, b.y, b.width, b.height].allSatisfy({ abs($0) <= ResultFields.maxCoordinate })
        else { return nil }
        self.init(box: Box(x: b.x, y: b.y, width: b.width, height: b.height), label: f.label ?? result.type, confidence: f.confidence ?? 1)
    }
}
