import Testing
@testable import CVHostAnalytics

/// Stationary tracks and the host's motion (MotionLook): a car that drives into a bay, parks for a
/// minute and drives out over a line, seen at 5 detections a second, or (gated on motion) only
/// while it moves and once every 10 s while it is parked.
@Suite("Stationary tracks, held through still time")
struct StationaryTests {
    static let bay = { () -> ZoneSettings in
        var z = ZoneSettings(name: "bay", polygon: Polygon([Point(400, 300), Point(800, 300), Point(800, 600), Point(400, 600)]))
        z.dwell = 30
        return z
    }()
    /// Vertical, at x 1000: the car crosses it once, on its way out.
    static let exit = LineSettings(name: "exit", segment: Segment(Point(1000, 100), Point(1000, 700)))

    /// The car's box at `t`: in from the left at 100 px/s until x 500 (t 5), parked until t 65
    /// (2 px of jitter), then out to the right at 100 px/s.
    static func car(_ t: Double) -> Box {
        let x = t < 5 ? t * 100 : t < 65 ? 500 + Double(Int(t * 5) % 3) - 1 : 500 + (t - 65) * 100
        return Box(x: x, y: 400, width: 200, height: 100)
    }

    static func moving(_ t: Double) -> Bool { t < 5 || t >= 65 }

    struct Run {
        var events: [AnalyticsEvent] = []
        var ids: Set<Int> = []
        func count(_ kind: AnalyticsEvent.Kind) -> Int { events.filter { $0.kind == kind }.count }
        var stationary: [Bool] { events.filter { $0.kind == .trackStationary }.compactMap { $0.fields["stationary"] as? Bool } }
    }

    /// The car seen at the frames at 5 a second that `given` keeps (the rest passed over between
    /// them, still ones counted as still), motion looked for or not; `missed`: frames the detector
    /// does not find it in.
    static func drive(motion: Bool, given: (Double) -> Bool, missed: (Int) -> Bool = { _ in false }, other: [Box] = []) -> Run {
        let a = BoxAnalytics(tracker: TrackerSettings(), zones: [bay], lines: [exit])
        var run = Run(), between: [Double] = [], still = 0.0, last: Double?
        for i in 0..<400 {
            let t = Double(i) / 5
            guard given(t) else {
                between.append(t)
                if let before = between.dropLast().last ?? last, !moving(t) { still += t - before }
                continue
            }
            let box = car(t)
            let seen = box.x < 1280 && !missed(i)
            let regions = (moving(t) ? [box] : []) + other
            let o = a.update(seen ? [Detection(box: box, label: "car", confidence: 0.9)] : [], time: t, width: 1280, height: 720,
                             between: between, motion: motion ? MotionLook(stillSeconds: still, regions: regions) : nil)
            run.events += o.betweenEvents.flatMap { $0 } + o.events
            run.ids.formUnion(o.trackIDs.compactMap { $0 })
            between = []
            still = 0
            last = t
        }
        run.events += a.finish()
        return run
    }

    @Test("every frame, with and without motion, and gated (parked: one frame in 50): one track, in the bay once, its dwell said once, out over the line once; stationary while parked, then moving")
    func parkedCar() {
        let every = Self.drive(motion: false, given: { _ in true })
        let looked = Self.drive(motion: true, given: { _ in true })
        let gated = Self.drive(motion: true, given: { t in Self.moving(t) || Int((t * 5).rounded()) % 50 == 0 })
        for (name, r) in [("every frame", every), ("with motion", looked), ("gated", gated)] {
            #expect(r.ids.count == 1 && r.count(.trackStarted) == 1 && r.count(.trackEnded) == 1, "\(name): \(r.ids)")
            #expect(r.count(.zoneEntered) == 1 && r.count(.zoneExited) == 1 && r.count(.zoneDwell) == 1, "\(name)")
            #expect(r.count(.lineCrossed) == 1, "\(name)")
            #expect(r.stationary == [true, false], "\(name): \(r.stationary)")
        }
        // Gated, without still time held, the car's track would end in its first 10 s parked: a new
        // track each refresh, never reported (one frame in a row), the bay left and entered again.
        let dwell = { (r: Run) in r.events.first { $0.kind == .zoneDwell }.map { $0.fields["seconds"] as? Double ?? 0 } ?? 0 }
        #expect(abs(dwell(gated) - dwell(every)) < 0.5, "the dwell is said in a frame passed over, as when every frame is seen")
    }

    @Test("a stationary car the detector misses for 4 s while someone walks elsewhere: held (motion did not touch it); without motion looked for, lost and counted again")
    func heldWhenUntouched() {
        let walker = Box(x: 100, y: 50, width: 40, height: 100)
        let blind = { (i: Int) in i >= 150 && i < 170 }  // t 30 to 34
        let held = Self.drive(motion: true, given: { _ in true }, missed: blind, other: [walker])
        #expect(held.ids.count == 1 && held.count(.zoneEntered) == 1, "\(held.ids)")
        let lost = Self.drive(motion: false, given: { _ in true }, missed: blind)
        #expect(lost.ids.count == 2 && lost.count(.zoneEntered) == 2, "\(lost.ids)")
        // Motion over the car (someone walks past it) and it is not found: lost, as without motion.
        let touched = Self.drive(motion: true, given: { _ in true }, missed: blind, other: [Box(x: 550, y: 380, width: 40, height: 100)])
        #expect(touched.ids.count == 2, "\(touched.ids)")
    }

    @Test("still time does not count against lost: a track not found in the first frame after 20 s in which nothing moved keeps its id; had something moved, it ends")
    func stillTimeHeld() {
        func run(still: Bool) -> Set<Int> {
            let a = BoxAnalytics(tracker: TrackerSettings())
            var ids: Set<Int> = []
            let box = Box(x: 100, y: 100, width: 50, height: 120)
            // Not found in the first frame after the still part (20.6).
            for t in [0.0, 0.2, 0.4, 0.6, 20.6, 20.8, 21.0, 21.2] {
                let o = a.update(t == 20.6 ? [] : [Detection(box: box, label: "person", confidence: 0.9)], time: t, width: 640, height: 480,
                                 motion: MotionLook(stillSeconds: t == 20.6 && still ? 19.8 : 0, regions: []))
                ids.formUnion(o.trackIDs.compactMap { $0 })
            }
            return ids
        }
        #expect(run(still: true).count == 1)
        #expect(run(still: false).count == 2)
    }

    @Test("a stationary box astride a line, its centre over it and back each frame within the overlap it settled at: never counted")
    func astrideLine() {
        let a = BoxAnalytics(tracker: TrackerSettings(), lines: [Self.exit])
        var crossed = 0, stationary = false
        for i in 0..<300 {
            let t = Double(i) / 5
            // Still for the first 12 s, then its centre 30 px either side of the line every frame.
            let dx = t < 12 ? 0.0 : (i % 2 == 0 ? -30 : 30)
            let o = a.update([Detection(box: Box(x: 900 + dx, y: 300, width: 200, height: 100), label: "car", confidence: 0.9)],
                             time: t, width: 1280, height: 720)
            crossed += o.events.filter { $0.kind == .lineCrossed }.count
            stationary = stationary || !o.stationary.isEmpty
        }
        #expect(stationary && crossed == 0)
    }

    @Test("stationary=0 never makes a track stationary; the option is checked and kept in the rule's JSON")
    func option() throws {
        let off = try AnalyticsSpec.tracked("detect:stationary=0")
        #expect(off.settings.stationary == 0)
        #expect(throws: AnalyticsSpec.Problem.self) { try AnalyticsSpec.tracked("detect:stationary=-1") }
        let a = BoxAnalytics(tracker: off.settings)
        var events: [AnalyticsEvent] = []
        for i in 0..<100 {
            events += a.update([Detection(box: Box(x: 10, y: 10, width: 50, height: 50), label: "car", confidence: 0.9)],
                               time: Double(i), width: 640, height: 480).events
        }
        #expect(!events.contains { $0.kind == .trackStationary })
    }
}
