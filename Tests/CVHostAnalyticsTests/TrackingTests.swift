import Testing
@testable import CVHostAnalytics

/// The scripted trajectory suite: counts, crossings, dwell and id continuity exact, at 30, 10 and 5
/// frames per second, with a noisy detector (jitter, missed frames, boxes of nothing).
@Suite("Tracks, zones and lines on scripted trajectories")
struct TrackingTests {
    static let rates: [Double] = [30, 10, 5]
    /// A door: a vertical line at x = 640 from y 100 to 600. Facing along it (a to b, down the
    /// picture), its left is the picture's right: "in" is the right-hand half.
    static let door = { () -> LineSettings in
        var l = LineSettings(name: "door", segment: Segment(Point(640, 100), Point(640, 600)))
        l.inSide = .left
        return l
    }()
    static let bay = { () -> ZoneSettings in
        var z = ZoneSettings(name: "bay", polygon: Polygon([Point(800, 300), Point(1100, 300), Point(1100, 650), Point(800, 650)]))
        z.dwell = 8
        return z
    }()

    static func person(_ points: [Point], start: Double = 0, speed: Double = 100, pauses: [Int: Double] = [:]) -> Scene.Object {
        Scene.Object(label: "person", width: 60, height: 160, at: Scene.path(points, speed: speed, start: start, pauses: pauses))
    }

    static func events(_ e: [AnalyticsEvent], _ kind: String) -> [[String: Any]] { e.filter { $0.kind.rawValue == kind }.map(\.fields) }

    /// Every object followed by one id from start to end, and no id given to two objects or to a box of nothing.
    static func expectContinuity(_ r: (events: [AnalyticsEvent], idsOf: [Int: Set<Int>], falseTracks: Int), objects: Int, fps: Double) {
        #expect(r.idsOf.count == objects, "\(fps) fps: \(r.idsOf)")
        for (object, ids) in r.idsOf { #expect(ids.count == 1, "\(fps) fps: object \(object) had ids \(ids)") }
        #expect(Set(r.idsOf.values.flatMap { $0 }).count == objects, "\(fps) fps: an id shared: \(r.idsOf)")
        #expect(r.falseTracks == 0, "\(fps) fps")
        #expect(events(r.events, "track.started").count == objects && events(r.events, "track.ended").count == objects, "\(fps) fps")
    }

    @Test("frames passed over between detections (a detector at 5 of 10 frames a second): the line sees each track there, placed between its boxes; a walk across is counted once, in a frame passed over or not; one that turns back 40 px before the line never is")
    func passedOver() {
        // A box 60 wide, its centre along x, seen every 0.2 s; the frames at 0.1, 0.3, ... passed over.
        func walk(_ centres: [Double]) -> (crossed: [Double], passedOver: Int) {
            let a = BoxAnalytics(tracker: TrackerSettings(), lines: [Self.door])
            var crossed: [Double] = [], passedOver = 0
            for (i, x) in centres.enumerated() {
                let t = Double(i) * 0.2
                let o = a.update([Detection(box: Box(x: x - 30, y: 300, width: 60, height: 160), label: "person", confidence: 0.9)],
                                 time: t, width: 1280, height: 720, between: i == 0 ? [] : [t - 0.1])
                for events in o.betweenEvents where events.contains(where: { $0.kind == .lineCrossed }) {
                    crossed.append(t - 0.1)
                    passedOver += 1
                }
                if o.events.contains(where: { $0.kind == .lineCrossed }) { crossed.append(t) }
            }
            return (crossed, passedOver)
        }
        let across = walk(stride(from: 400.0, through: 900, by: 20).map { $0 })
        #expect(across.crossed.count == 1, "\(across)")
        let back = walk(stride(from: 400.0, through: 600, by: 20).map { $0 } + stride(from: 580.0, through: 400, by: -20).map { $0 })
        #expect(back.crossed.isEmpty, "\(back)")
        // Every other frame's crossing lands in a passed-over frame at times: over several phases, some do.
        let phases = (0..<4).map { k in walk(stride(from: 400.0 + Double(k) * 5, through: 900, by: 20).map { $0 }) }
        #expect(phases.allSatisfy { $0.crossed.count == 1 } && phases.contains { $0.passedOver == 1 }, "\(phases)")
    }

    @Test("two people cross a line both ways and pass each other: one crossing each, the right direction, running counts", arguments: rates)
    func crossingBothWays(fps: Double) {
        // Left to right (into the right half: "in" is left of a downward line, the picture's right).
        let scene = Scene(objects: [Self.person([Point(300, 400), Point(1000, 400)]),
                                    Self.person([Point(1000, 440), Point(300, 440)], start: 0.5)], seconds: 9)
        let r = scene.run(BoxAnalytics(tracker: TrackerSettings(), lines: [Self.door]), fps: fps)
        Self.expectContinuity(r, objects: 2, fps: fps)
        let crossed = Self.events(r.events, "line.crossed")
        #expect(crossed.map { $0["direction"] as? String } == ["in", "out"] || crossed.map { $0["direction"] as? String } == ["out", "in"],
                "\(fps) fps: \(crossed)")
        #expect(crossed.last?["in"] as? Int == 1 && crossed.last?["out"] as? Int == 1, "\(fps) fps: \(crossed)")
    }

    @Test("a person who stops on the line and jitters over it for 3 s is counted once", arguments: rates)
    func jitterOnTheLine(fps: Double) {
        var scene = Scene(objects: [Self.person([Point(300, 400), Point(640, 400), Point(1000, 400)], pauses: [0: 3])], seconds: 11)
        scene.jitter = 6
        let r = scene.run(BoxAnalytics(tracker: TrackerSettings(), lines: [Self.door]), fps: fps)
        Self.expectContinuity(r, objects: 1, fps: fps)
        let crossed = Self.events(r.events, "line.crossed")
        #expect(crossed.count == 1 && crossed.first?["direction"] as? String == "in", "\(fps) fps: \(crossed)")
    }

    @Test("a person hidden for 0.9 s keeps their id; walking around the end of a line is no crossing", arguments: rates)
    func occlusion(fps: Double) {
        let walk = Scene.path([Point(100, 400), Point(1200, 400)], speed: 100)
        let hidden = Scene.Object(label: "person", width: 60, height: 160, at: { t in (4.0..<4.9).contains(t) ? nil : walk(t) })
        // Below the door's lower end (its anchor, the box's bottom, at y 640 + 80 = 720 > 600): around it.
        let around = Self.person([Point(1100, 640), Point(200, 640)], start: 1)
        let r = Scene(objects: [hidden, around], seconds: 11.5).run(BoxAnalytics(tracker: TrackerSettings(), lines: [Self.door]), fps: fps)
        Self.expectContinuity(r, objects: 2, fps: fps)
        let crossed = Self.events(r.events, "line.crossed")
        #expect(crossed.count == 1 && crossed.first?["track_id"] as? Int == r.idsOf[0]?.first, "\(fps) fps: \(crossed)")
    }

    @Test("a car that stays in a bay: entered, dwell after 8 s, exited with its time; one passing through: entered and exited; occupancy", arguments: rates)
    func zoneDwell(fps: Double) {
        let car = Scene.Object(label: "car", width: 160, height: 100,
                               at: Scene.path([Point(300, 500), Point(950, 500), Point(950, 100)], speed: 150, pauses: [0: 12]))
        let passing = Scene.Object(label: "car", width: 160, height: 100, at: Scene.path([Point(1250, 450), Point(650, 450)], speed: 150, start: 2))
        let r = Scene(objects: [car, passing], seconds: 22).run(BoxAnalytics(tracker: TrackerSettings(), zones: [Self.bay]), fps: fps)
        Self.expectContinuity(r, objects: 2, fps: fps)
        let parked = r.idsOf[0]!.first!, through = r.idsOf[1]!.first!
        let entered = Self.events(r.events, "zone.entered"), exited = Self.events(r.events, "zone.exited")
        #expect(Set(entered.compactMap { $0["track_id"] as? Int }) == [parked, through] && entered.count == 2, "\(fps) fps: \(entered)")
        #expect(Set(exited.compactMap { $0["track_id"] as? Int }) == [parked, through] && exited.count == 2, "\(fps) fps: \(exited)")
        let dwell = Self.events(r.events, "zone.dwell")
        #expect(dwell.count == 1 && dwell.first?["track_id"] as? Int == parked, "\(fps) fps: \(dwell)")
        // The parked car stayed about 12 s plus the time its anchor took to cross the bay.
        let stay = exited.first { $0["track_id"] as? Int == parked }?["seconds"] as? Double ?? 0
        #expect(stay > 11 && stay < 16, "\(fps) fps: \(stay)")
        // Occupancy rose to 2 while both were in, and ended at 0.
        let occupancy = Self.events(r.events, "zone.occupancy").compactMap { $0["count"] as? Int }
        #expect(occupancy.max() == 2 && occupancy.last == 0, "\(fps) fps: \(occupancy)")
    }
}

extension TrackingTests {
    @Test("a plugin with a new label for every object: a line and a zone keep counts for the first 64 labels and `_other` for the rest, nothing lost")
    func labelsBounded() {
        var line = LineWatch(Self.door)
        var zone = ZoneWatch(Self.bay)
        var events: [AnalyticsEvent] = []
        for t in 0..<200 {
            for x in [300.0, 300, 300, 1000, 1000, 1000] {
                let box = Box(x: x, y: 400, width: 60, height: 160)
                line.see(track: t, label: "label-\(t)", box: box, into: &events)
                zone.see(track: t, label: "label-\(t)", box: Box(x: x - 100, y: 400, width: 60, height: 160), time: 0, into: &events)
            }
        }
        #expect(line.counts.count == CountedLabel.maxLabels + 1 && line.counts[CountedLabel.other]?.in == 200 - CountedLabel.maxLabels)
        #expect(line.counts.values.reduce(0) { $0 + $1.in } == 200)
        #expect(zone.entries.count == CountedLabel.maxLabels + 1 && zone.entries.values.reduce(0, +) == 200)
        #expect(zone.counts.values.reduce(0, +) == 200 && zone.counts[CountedLabel.other] == 200 - CountedLabel.maxLabels)
    }
}

/// The ways real detectors and cameras make counts go wrong: a box parked on a line or a zone's
/// edge jittering over it, a label that flips between classes, boxes under the tracker's start
/// threshold, a frame size that changes; each count exact, at 30, 10 and 5 fps.
extension TrackingTests {
    static func car(_ points: [Point], pauses: [Int: Double] = [:]) -> Scene.Object {
        Scene.Object(label: "car", width: 80, height: 40, at: Scene.path(points, speed: 120, pauses: pauses))
    }

    /// A car parked 10 s with its box's centre at `at`, its 80x40 box jittering up to 6 px (15% of its height).
    static func parked(at p: Point) -> Scene {
        var scene = Scene(objects: [Self.car([p, Point(p.x, p.y + 1)], pauses: [0: 10])], seconds: 10)
        scene.jitter = 6
        scene.falseBoxesPerSecond = 0
        scene.missed = 0
        return scene
    }

    @Test("a car parked on a counting line for 10 s, its 80x40 box jittering up to 6 px (15% of its height) over it: never counted", arguments: rates)
    func parkedOnTheLine(fps: Double) {
        // Its anchor (bottom centre) stands on the line: x = 640.
        let r = Self.parked(at: Point(640, 400)).run(BoxAnalytics(tracker: TrackerSettings(), lines: [Self.door]), fps: fps)
        #expect(Self.events(r.events, "line.crossed").isEmpty, "\(fps) fps: \(Self.events(r.events, "line.crossed"))")
    }

    @Test("a car parked on a zone's edge, jittering over it for 10 s: it never enters", arguments: rates)
    func parkedOnTheEdge(fps: Double) {
        // Its anchor (bottom centre, y + 20) on the bay's left edge, x = 800.
        let r = Self.parked(at: Point(800, 480)).run(BoxAnalytics(tracker: TrackerSettings(), zones: [Self.bay]), fps: fps)
        #expect(Self.events(r.events, "zone.entered").isEmpty && Self.events(r.events, "zone.exited").isEmpty, "\(fps) fps")
    }

    @Test("a person whose label flips between two classes frame to frame: one track, one crossing, the label seen most", arguments: rates)
    func labelFlips(fps: Double) {
        var walker = Self.person([Point(300, 400), Point(1000, 400)])
        walker.flips = [("man", 0.7), ("woman", 0.3)]
        let scene = Scene(objects: [walker], seconds: 8)
        let r = scene.run(BoxAnalytics(tracker: TrackerSettings(), lines: [Self.door]), fps: fps)
        Self.expectContinuity(r, objects: 1, fps: fps)
        let crossed = Self.events(r.events, "line.crossed")
        #expect(crossed.count == 1 && crossed.first?["label"] as? String == "man" && crossed.first?["total_in"] as? Int == 1, "\(fps) fps: \(crossed)")
        let ended = Self.events(r.events, "track.ended").first
        #expect(ended?["label"] as? String == "man" && (ended?["labels"] as? [String: Int])?.keys.sorted() == ["man", "woman"], "\(fps) fps: \(String(describing: ended))")
        // Per label, as before, when asked.
        var byLabel = TrackerSettings()
        byLabel.byLabel = true
        let split = scene.run(BoxAnalytics(tracker: byLabel, lines: [Self.door]), fps: fps)
        #expect(Self.events(split.events, "track.started").count >= 2, "\(fps) fps")
    }

    @Test("boxes reported at 0.3, under the tracker's default high (0.4): a tracker following the plugin's confidence (0.25) tracks and counts them", arguments: rates)
    func weakBoxesFollowed(fps: Double) {
        var walker = Self.person([Point(300, 400), Point(1000, 400)])
        walker.confidence = 0.3
        let scene = Scene(objects: [walker], seconds: 8)
        let followed = scene.run(BoxAnalytics(tracker: TrackerSettings().following(confidence: 0.25), lines: [Self.door]), fps: fps)
        #expect(Self.events(followed.events, "line.crossed").count == 1, "\(fps) fps")
        // high given (0.4): it is not lowered; the boxes are reported but never tracked, and counted so.
        var strict = TrackerSettings()
        strict.high = 0.4
        let analytics = BoxAnalytics(tracker: strict.following(confidence: 0.25), lines: [Self.door])
        let ignored = scene.run(analytics, fps: fps)
        #expect(Self.events(ignored.events, "track.started").isEmpty && analytics.counts.untracked > 0, "\(fps) fps")
    }

    @Test("the frame's size changes halfway (1280x720 to 640x360): a line in fractions is placed again, tracks and counts kept", arguments: rates)
    func frameSizeChanges(fps: Double) {
        var door = LineSettings(name: "door", segment: Segment(Point(0.5, 0.1), Point(0.5, 0.9)))
        door.fractions = true
        var scene = Scene(objects: [Self.person([Point(300, 400), Point(1000, 400)]), Self.person([Point(300, 300), Point(1000, 300)], start: 9)], seconds: 17)
        scene.frameSize = { $0 < 8.5 ? (1280, 720) : (640, 360) }
        let analytics = BoxAnalytics(tracker: TrackerSettings(), lines: [door])
        let r = scene.run(analytics, fps: fps)
        let crossed = Self.events(r.events, "line.crossed")
        #expect(crossed.map { $0["in"] as? Int } == [1, 2], "\(fps) fps: \(crossed)")
        let summary = Self.events(r.events, "analytics.summary").first
        #expect((summary?["lines"] as? [[String: Any]])?.first?["total_in"] as? Int == 2, "\(fps) fps: \(String(describing: summary))")
    }
}

/// The clock the analytics count in: monotonic whatever the timestamps do.
@Suite("The analytics' clock")
struct AnalyticsClockTests {
    @Test("a live camera that reconnects after 8.4 s and restarts its timestamps at 0: time goes on by the 8.4 s that passed; one jump")
    func restartAtZero() {
        var c = AnalyticsClock(live: true)
        var times: [Double] = []
        for n in 0..<60 { times.append(c.time(ptsNs: Int64(n) * 33_333_333, wallNs: 1_000_000_000_000 + Int64(n) * 33_333_333).time) }
        let before = times.last!
        let after = c.time(ptsNs: 0, wallNs: 1_000_000_000_000 + 59 * 33_333_333 + 8_400_000_000)
        #expect(after.jump != nil && abs(after.time - before - 8.4) < 0.001)
        let next = c.time(ptsNs: 33_333_333, wallNs: 1_000_000_000_000 + 59 * 33_333_333 + 8_433_333_333)
        #expect(next.jump == nil && abs(next.time - after.time - 0.0333) < 0.001 && c.jumps == 1)
    }

    @Test("a camera whose every 10th frame is stamped 3 s back: time steps one frame interval each frame, never back")
    func framesStampedBack() {
        var c = AnalyticsClock(live: true)
        var last = -1.0
        for n in 0..<360 {
            let pts = Int64(n) * 33_333_333 - (n % 10 == 9 ? 3_000_000_000 : 0)
            let t = c.time(ptsNs: pts, wallNs: Int64(n) * 33_333_333).time
            #expect(t >= last && (last < 0 || t - last < 0.05), "frame \(n): \(t) after \(last)")
            last = t
        }
        // 36 frames stamped back, and the 35 after them that jump forward again.
        #expect(abs(last - 359 * 0.0333) < 0.1 && c.jumps == 71)
    }

    @Test("a file: its media time as it is, a gap included; a step back is one frame interval")
    func fileTime() {
        var c = AnalyticsClock(live: false)
        _ = c.time(ptsNs: 0, wallNs: 0)
        _ = c.time(ptsNs: 40_000_000, wallNs: 1_000)
        #expect(c.time(ptsNs: 5_040_000_000, wallNs: 2_000).time == 5.04)
        #expect(abs(c.time(ptsNs: 0, wallNs: 3_000).time - 5.08) < 1e-9 && c.jumps == 1)
        #expect(c.time(ptsNs: .min, wallNs: .max).time >= 5.08)
    }
}
