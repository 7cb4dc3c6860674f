import Testing
@testable import CVHostAnalytics

/// Boxes kept from the tracker (Frigate's object filters and masks), and zones and lines that
/// count some labels only.
@Suite("Filters, masks and the labels a zone or line counts")
struct BoxFilterTests {
    static func person(_ x: Double, y: Double = 320, width: Double = 60, height: Double = 160, label: String = "person",
                       confidence: Double = 0.9) -> Detection {
        Detection(box: Box(x: x - width / 2, y: y, width: width, height: height), label: label, confidence: confidence)
    }

    /// Objects walking right across the door, 8 px a frame at 10 frames a second.
    static func walk(_ analytics: BoxAnalytics, _ objects: (Double) -> [Detection]) -> (events: [AnalyticsEvent], tracked: Int) {
        var events: [AnalyticsEvent] = [], tracked = 0
        for n in 0..<90 {
            let o = analytics.update(objects(400 + 8 * Double(n)), time: Double(n) / 10, width: 1280, height: 720)
            events += o.events
            tracked += o.trackIDs.compactMap { $0 }.count
        }
        return (events + analytics.finish(), tracked)
    }

    @Test("a filter per label (and * for the rest) refuses by score, area (pixels, or a share of the frame), and shape; a mask by the box's anchor; each counted by reason, none tracked")
    func refusals() {
        var person = BoxFilter(label: "person")
        person.minArea = 2000
        person.maxRatio = 1
        var every = BoxFilter(label: BoxFilter.everyLabel)
        every.minScore = 0.5
        every.maxArea = 0.1  // a tenth of the frame: 92,160 px
        var road = BoxMask(name: "road", polygon: Polygon([Point(0, 600), Point(1280, 600), Point(1280, 720), Point(0, 720)]))
        road.anchor = .bottomCenter
        let a = BoxAnalytics(tracker: TrackerSettings(), lines: [TrackingTests.door], filters: [person, every], masks: [road])
        let r = Self.walk(a) { x in
            [Self.person(x),                                              // followed
             Self.person(x, y: 100, width: 20, height: 40),               // min_area
             Self.person(x, y: 50, width: 100, height: 60),                // max_ratio (wider than high)
             Self.person(x, y: 0, label: "car", confidence: 0.3),          // min_score (*)
             Self.person(x, y: 0, width: 400, height: 300, label: "bus"),  // max_area (*)
             Self.person(x, y: 500, label: "car")]                         // in the mask: its bottom at 660
        }
        #expect(TrackingTests.events(r.events, "line.crossed").count == 1)
        #expect(a.counts.filtered == ["min_area": 90, "max_ratio": 90, "min_score": 90, "max_area": 90, "mask": 90], "\(a.counts.filtered)")
        let summary = TrackingTests.events(r.events, "analytics.summary").first?["filtered_results"] as? [String: Int]
        #expect(summary?["mask"] == 90 && a.counts.tracksStarted == 1)
    }

    @Test("a line and a zone with labels= count those labels only; the others pass unseen")
    func labels() {
        var people = TrackingTests.door
        people.labels = ["person"]
        var vehicles = LineSettings(name: "vehicles", segment: TrackingTests.door.segment)
        vehicles.labels = ["car", "truck"]
        var bay = TrackingTests.bay
        bay.labels = ["car"]
        bay.dwell = nil
        let a = BoxAnalytics(tracker: TrackerSettings(), zones: [bay], lines: [people, vehicles])
        let r = Self.walk(a) { x in [Self.person(x), Self.person(x, y: 420, width: 160, height: 100, label: "car")] }
        let crossed = TrackingTests.events(r.events, "line.crossed").map { "\($0["line"] ?? "") \($0["label"] ?? "")" }
        #expect(crossed.sorted() == ["door person", "vehicles car"], "\(crossed)")
        let entered = TrackingTests.events(r.events, "zone.entered").map { $0["label"] as? String }
        #expect(entered == ["car"], "\(entered)")
    }
}
