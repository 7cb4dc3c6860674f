import Testing
@testable import CVHostAnalytics

/// Speed through a measured zone: a lane 3.5 m wide seen over 20 m in perspective (its far edge
/// 200 px wide, its near edge 440 px, 200 px above the picture's bottom), a car driving down it at
/// a known speed, seen by the noisy detector of the trajectory suite at 30, 10 and 5 frames a second.
@Suite("Speed through a measured zone")
struct SpeedTests {
    /// The lane's corners in the picture (far left, far right, near right, near left) and on the ground (metres).
    static let picture = [Point(540, 180), Point(740, 180), Point(860, 520), Point(420, 520)]
    static let ground = [Point(0, 0), Point(3.5, 0), Point(3.5, 20), Point(0, 20)]

    static func lane(_ unit: GroundPlane.SpeedUnit = .kmh) -> ZoneSettings {
        var z = ZoneSettings(name: "lane", polygon: Polygon(picture))
        z.distances = unit == .mph ? [3.5, 20, 3.5, 20].map { $0 / 0.3048 } : [3.5, 20, 3.5, 20]
        z.speedUnit = unit
        return z
    }

    /// A car 1.8 m wide whose box's bottom centre drives down the middle of the lane at
    /// `metresPerSecond`, from 6 m before the far edge to the picture's bottom (4.5 m past the near
    /// one); its box as wide as 1.8 m is there (larger as it nears), three quarters as high.
    static func car(metresPerSecond: Double) -> Scene.Object {
        let toPicture = GroundPlane(from: ground, to: picture)!
        func size(_ t: Double) -> (width: Double, height: Double) {
            let v = -6 + metresPerSecond * t
            let width = (toPicture.ground(Point(2.65, v))?.x ?? 0) - (toPicture.ground(Point(0.85, v))?.x ?? 0)
            return (width, width * 0.75)
        }
        var car = Scene.Object(label: "car", width: 0, height: 0, at: { t in
            let v = -6 + metresPerSecond * t
            guard v <= 24.5, let p = toPicture.ground(Point(1.75, v)) else { return nil }
            return Point(p.x, p.y - size(t).height / 2)
        })
        car.sizeAt = size
        return car
    }

    @Test("the picture's corners land on the ground's, and a point between them where it should")
    func groundMap() throws {
        let g = try #require(GroundPlane(corners: Self.picture, sides: [3.5, 20, 3.5, 20]))
        for (p, q) in zip(Self.picture, Self.ground) { #expect(try #require(g.ground(p)).distance(to: q) < 1e-9) }
        // The lane's middle, 10 m on, is seen nearer the far edge than halfway down the lane in the picture (perspective).
        let middle = try #require(GroundPlane(from: Self.ground, to: Self.picture)?.ground(Point(1.75, 10)))
        let back = try #require(g.ground(middle))
        #expect(middle.y < 350 && back.distance(to: Point(1.75, 10)) < 1e-9)
        // Three corners in a line, or sides of no length: no ground.
        #expect(GroundPlane(corners: [Point(0, 0), Point(10, 0), Point(20, 0), Point(0, 10)], sides: [1, 1, 1, 1]) == nil)
        #expect(GroundPlane(corners: Self.picture, sides: [3.5, 0, 3.5, 20]) == nil)
    }

    @Test("a car at 36 km/h: zone.exited says 36 km/h within 5%, a line across the lane says its speed so far within 10%", arguments: TrackingTests.rates)
    func carThroughTheLane(fps: Double) throws {
        let middle = LineSettings(name: "middle", segment: Segment(Point(200, 350), Point(1100, 350)))
        let r = Scene(objects: [Self.car(metresPerSecond: 10)], seconds: 4.2).run(BoxAnalytics(tracker: TrackerSettings(), zones: [Self.lane()], lines: [middle]), fps: fps)
        let exited = try #require(TrackingTests.events(r.events, "zone.exited").first, "\(fps) fps")
        #expect(exited["reason"] as? String == "left" && exited["speed_unit"] as? String == "km/h", "\(fps) fps: \(exited)")
        let speed = try #require(exited["speed"] as? Double, "\(fps) fps: \(exited)")
        #expect(abs(speed - 36) <= 36 * 0.05, "\(fps) fps: \(speed) km/h")
        let crossed = try #require(TrackingTests.events(r.events, "line.crossed").first, "\(fps) fps")
        let soFar = try #require(crossed["speed"] as? Double, "\(fps) fps: \(crossed)")
        #expect(abs(soFar - 36) <= 36 * 0.1 && crossed["speed_zone"] as? String == "lane", "\(fps) fps: \(crossed)")
    }

    @Test("the same car with the distances in feet: mph; a zone without distances says no speed")
    func unitsAndUnmeasured() throws {
        let r = Scene(objects: [Self.car(metresPerSecond: 10)], seconds: 4.2).run(BoxAnalytics(tracker: TrackerSettings(), zones: [Self.lane(.mph)]), fps: 30)
        let exited = try #require(TrackingTests.events(r.events, "zone.exited").first)
        #expect(exited["speed_unit"] as? String == "mph")
        let mph = try #require(exited["speed"] as? Double)
        #expect(abs(mph - 22.37) <= 22.37 * 0.05, "\(exited)")
        let plain = Scene(objects: [Self.car(metresPerSecond: 10)], seconds: 4.2)
            .run(BoxAnalytics(tracker: TrackerSettings(), zones: [ZoneSettings(name: "lane", polygon: Polygon(Self.picture))]), fps: 30)
        #expect(TrackingTests.events(plain.events, "zone.exited").first?["speed"] == nil)
    }

    @Test("refusals: distances for a zone of five points, three distances, a speed_unit without distances, a unit unknown")
    func refusals() {
        func refusal(_ text: String) -> String {
            do { _ = try AnalyticsSpec.zone(text); return "" } catch { return error.description }
        }
        let lane = "lane=540,180 740,180 860,520 420,520"
        #expect(refusal(lane + ":distances=3.5,20,3.5,20,speed_unit=mph,dwell=5").isEmpty)
        #expect(refusal("z=0,0 10,0 10,10 5,15 0,10:distances=1,1,1,1").contains("distances measure a zone of four points"))
        #expect(refusal(lane + ":distances=3.5,20,3.5").contains("four numbers above 0"))
        #expect(refusal(lane + ":distances=3.5,20,-3.5,20").contains("four numbers above 0"))
        #expect(refusal(lane + ":speed_unit=kmh").contains("give distances=A,B,C,D too"))
        #expect(refusal(lane + ":distances=3.5,20,3.5,20,speed_unit=knots").contains("speed_unit is kmh"))
    }
}
