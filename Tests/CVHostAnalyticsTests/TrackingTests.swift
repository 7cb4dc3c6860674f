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

    static func events(_ e: [AnalyticsEvent], _ kind: String) -> [[String: Any]] { e.filter { $0.kind == kind }.map(\.fields) }

    /// Every object followed by one id from start to end, and no id given to two objects or to a box of nothing.
    static func expectContinuity(_ r: (events: [AnalyticsEvent], idsOf: [Int: Set<Int>], falseTracks: Int), objects: Int, fps: Double) {
        #expect(r.idsOf.count == objects, "\(fps) fps: \(r.idsOf)")
        for (object, ids) in r.idsOf { #expect(ids.count == 1, "\(fps) fps: object \(object) had ids \(ids)") }
        #expect(Set(r.idsOf.values.flatMap { $0 }).count == objects, "\(fps) fps: an id shared: \(r.idsOf)")
        #expect(r.falseTracks == 0, "\(fps) fps")
        #expect(events(r.events, "track.started").count == objects && events(r.events, "track.ended").count == objects, "\(fps) fps")
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
