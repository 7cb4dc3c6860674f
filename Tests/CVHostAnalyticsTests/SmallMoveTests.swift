import Testing
@testable import CVHostAnalytics

/// The band a track must pass to change side follows the track's own jitter (issue 60): small
/// objects that move less than a box height across a line are counted at low detection rates,
/// a box standing a little inside a zone's edge is inside, and a parked car's jitter still never
/// counts (TrackingTests' parked cases, run at these rates too).
@Suite("Counting small moves at low detection rates")
struct SmallMoveTests {
    static let rates: [Double] = [30, 10, 5, 3]

    /// A sloped line (about 42 degrees), from (400, 150) to (900, 600); "in" on its left facing a to b.
    static let slope = LineSettings(name: "slope", segment: Segment(Point(400, 150), Point(900, 600)))

    /// Three faces (60 x 70 boxes), each seen 2 s where it is, then moving 55 px sideways across the
    /// sloped line and back, five times, resting 1 s at each end: 15 crossings each way. Their
    /// bottom centres sit about 18 px from the line at each end (the move's share across a line of
    /// this slope is 37 px).
    static func faces(move: Double = 55) -> Scene {
        var objects: [Scene.Object] = []
        for (k, y) in [250.0, 380, 510].enumerated() {
            // The line's x at the anchor's height (y + 35), less half the move: the face starts left of it.
            let lineX = 400 + (y + 35 - 150) * 500 / 450
            let left = Point(lineX - move / 2, y), right = Point(lineX + move / 2, y)
            var points = [left, left]
            for _ in 0..<5 { points += [right, left] }
            let pauses = Dictionary(uniqueKeysWithValues: (0..<points.count).map { ($0, $0 == 0 ? 2.0 : 1.0) })
            objects.append(Scene.Object(label: "face", width: 60, height: 70,
                                        at: Scene.path(points, speed: move, start: 0.2 * Double(k), pauses: pauses)))
        }
        var scene = Scene(objects: objects, seconds: 24)
        scene.jitter = 2
        return scene
    }

    /// 55 px at 3 detections a second too; 45 px (its anchor 15 px from the line at each end) from 5 up.
    static let moves: [(fps: Double, move: Double)] = rates.map { ($0, 55) } + [(30, 45), (10, 45), (5, 45)]

    @Test("three faces 70 px high moving 55 or 45 px across a sloped line and back five times: 15 in and 15 out", arguments: moves)
    func smallMovesCounted(fps: Double, move: Double) {
        let r = Self.faces(move: move).run(BoxAnalytics(tracker: TrackerSettings(), lines: [Self.slope]), fps: fps)
        let crossed = TrackingTests.events(r.events, "line.crossed")
        let ins = crossed.filter { $0["direction"] as? String == "in" }.count
        let outs = crossed.filter { $0["direction"] as? String == "out" }.count
        #expect(ins + outs == 30 && abs(ins - outs) <= 3 && r.idsOf.count == 3, "\(fps) fps, \(move) px: \(ins) in, \(outs) out, ids \(r.idsOf)")
    }

    @Test("a person standing still for 5 s with the anchor 15 px inside a zone's edge: entered, and a dwell", arguments: rates)
    func standingInsideTheEdge(fps: Double) {
        var zone = ZoneSettings(name: "desk", polygon: Polygon([Point(800, 300), Point(1100, 300), Point(1100, 650), Point(800, 650)]))
        zone.dwell = 3
        // Its bottom centre (y + 80) at x 815, 15 px inside the left edge.
        var scene = Scene(objects: [TrackingTests.person([Point(815, 400), Point(815, 401)], pauses: [0: 5])], seconds: 5)
        scene.falseBoxesPerSecond = 0
        let r = scene.run(BoxAnalytics(tracker: TrackerSettings(), zones: [zone]), fps: fps)
        #expect(TrackingTests.events(r.events, "zone.entered").count == 1, "\(fps) fps")
        #expect(TrackingTests.events(r.events, "zone.dwell").count == 1, "\(fps) fps")
    }

    @Test("a car parked on a counting line and on a zone's edge, jittering 6 px: never counted, never enters, at 3 fps too")
    func parkedAtThreeFPS() {
        let line = TrackingTests.parked(at: Point(640, 400)).run(BoxAnalytics(tracker: TrackerSettings(), lines: [TrackingTests.door]), fps: 3)
        #expect(TrackingTests.events(line.events, "line.crossed").isEmpty)
        let zone = TrackingTests.parked(at: Point(800, 480)).run(BoxAnalytics(tracker: TrackerSettings(), zones: [TrackingTests.bay]), fps: 3)
        #expect(TrackingTests.events(zone.events, "zone.entered").isEmpty)
    }
}

@Suite("A track's measured jitter")
struct TrackJitterTests {
    /// Boxes of 60 x 70 whose left edge goes along `x(t)` at 5 a second, each edge moved by up to `noise` px.
    static func measured(noise: Double, _ x: (Double) -> Double, boxes: Int = 30) -> Double? {
        var jitter = TrackJitter(), random = Random(seed: 11)
        for n in 0..<boxes {
            let t = Double(n) / 5
            func j() -> Double { (random.unit() * 2 - 1) * noise }
            jitter.see(Box(x: x(t) + j(), y: 300 + j(), width: 60 + j(), height: 70 + j()), time: t)
        }
        return jitter.deviation
    }

    @Test("nothing is known before a few boxes; a steady move is no jitter; a detector's noise is found whether the box stands, moves steadily, or starts and stops")
    func deviation() throws {
        #expect(Self.measured(noise: 2, { _ in 100 }, boxes: 5) == nil)
        #expect(try #require(Self.measured(noise: 0, { 100 + 40 * $0 })) < 1e-9)
        // Uniform noise of ±2 px: a deviation of 1.15 px.
        let paths: [(Double) -> Double] = [{ _ in 100 }, { 100 + 40 * $0 }, { 100 + 55 * min(max($0 - 2, 0), 1) }]
        for path in paths {
            let d = try #require(Self.measured(noise: 2, path))
            #expect(d > 0.6 && d < 2, "\(d)")
        }
    }

    @Test("the band: the line's or zone's default until a jitter is known; three deviations, at least a twentieth of the box's height, at most the default")
    func band() {
        #expect(TrackJitter.band(deviation: nil, height: 70, most: 17.5) == 17.5)
        #expect(TrackJitter.band(deviation: 2, height: 70, most: 17.5) == 6)
        #expect(TrackJitter.band(deviation: 0.1, height: 70, most: 17.5) == 3.5)
        #expect(TrackJitter.band(deviation: 10, height: 70, most: 17.5) == 17.5)
    }
}
