import Testing
@testable import CVHostAnalytics

/// Counts kept from a run before (`--state`): a line or zone of the name and shape they were
/// counted on goes on from them; one moved, turned round or given in other units starts anew.
@Suite("Counts that go on from a run before")
struct CountTotalsTests {
    static let door = TrackingTests.door
    static let bay = TrackingTests.bay

    /// A person walking right across the door and into the bay, then out of the picture.
    static func walk(_ analytics: BoxAnalytics) -> [AnalyticsEvent] {
        var events: [AnalyticsEvent] = []
        for n in 0..<90 {
            let x = 400 + 8 * Double(n)
            events += analytics.update([Detection(box: Box(x: x - 30, y: 320, width: 60, height: 160), label: "person", confidence: 0.9)],
                                       time: Double(n) / 10, width: 1280, height: 720).events
        }
        return events + analytics.finish()
    }

    static func kept(lineIn: Int, entered: Int, line: LineSettings = door, zone: ZoneSettings = bay) -> CountTotals {
        var t = CountTotals()
        t.lines[line.name] = .init(line, labels: ["person": .init(in: lineIn, out: 2), "car": .init(in: 1, out: 0)])
        t.zones[zone.name] = .init(zone, labels: ["person": .init(entered: entered)])
        return t
    }

    @Test("a line and a zone of the same shape go on: the crossing says in 6 (5 kept), total_in 7 with the car's; the zone's entries 4; the totals say so")
    func goesOn() {
        let a = BoxAnalytics(tracker: TrackerSettings(), zones: [Self.bay], lines: [Self.door], kept: Self.kept(lineIn: 5, entered: 3))
        let events = Self.walk(a)
        let crossed = TrackingTests.events(events, "line.crossed")
        #expect(crossed.count == 1 && crossed[0]["in"] as? Int == 6 && crossed[0]["out"] as? Int == 2 && crossed[0]["total_in"] as? Int == 7,
                "\(crossed)")
        let t = a.totals
        #expect(t.lines["door"]?.labels["person"] == .init(in: 6, out: 2) && t.lines["door"]?.labels["car"] == .init(in: 1, out: 0))
        #expect(t.zones["bay"]?.labels["person"] == .init(entered: 4))
        #expect(a.counts.crossings.first { $0.label == "person" }?.in == 6)
    }

    @Test("a line moved, turned round or in other units, and a zone moved, start anew")
    func shapeChanged() {
        var moved = Self.door
        moved.segment = Segment(Point(650, 100), Point(650, 600))
        var turned = Self.door
        turned.inSide = .right
        var movedZone = Self.bay
        movedZone.polygon = Polygon([Point(810, 300), Point(1100, 300), Point(1100, 650), Point(810, 650)])
        for line in [moved, turned] {
            let a = BoxAnalytics(tracker: TrackerSettings(), zones: [movedZone], lines: [line], kept: Self.kept(lineIn: 5, entered: 3))
            let crossed = TrackingTests.events(Self.walk(a), "line.crossed")
            #expect(crossed.count == 1 && (crossed[0]["in"] as? Int ?? 0) + (crossed[0]["out"] as? Int ?? 0) == 1, "\(crossed)")
            #expect(a.totals.zones["bay"]?.labels["person"] == .init(entered: 1))
        }
        var fractions = Self.door
        fractions.fractions = true
        fractions.segment = Segment(Point(0.5, 0.1), Point(0.5, 0.9))
        #expect(!Self.kept(lineIn: 5, entered: 3).lines["door"]!.counts(fractions))
    }

    @Test("counts set back to 0: one line, or all; who is inside a zone stays inside; an input opened anew goes on from the old one's counts")
    func resetAndGoOn() {
        let a = BoxAnalytics(tracker: TrackerSettings(), zones: [Self.bay], lines: [Self.door], kept: Self.kept(lineIn: 5, entered: 3))
        a.resetCounts(lines: ["door"], zones: [])
        #expect(a.totals.lines["door"]?.labels.isEmpty == true && a.totals.zones["bay"]?.labels["person"] == .init(entered: 3))
        a.resetCounts(lines: nil, zones: nil)
        #expect(a.totals.zones["bay"]?.labels.isEmpty == true)
        let b = BoxAnalytics(tracker: TrackerSettings(), zones: [Self.bay], lines: [Self.door])
        b.goOn(from: Self.kept(lineIn: 9, entered: 4))
        #expect(b.totals.lines["door"]?.labels["person"] == .init(in: 9, out: 2) && b.totals.zones["bay"]?.labels["person"] == .init(entered: 4))
    }

    @Test("kept counts of more labels than a line keeps (an edited file): the first 64 by name keep their own, the rest go into _other, nothing lost")
    func labelsBounded() {
        var t = CountTotals()
        t.lines["door"] = .init(Self.door, labels: Dictionary(uniqueKeysWithValues: (0..<100).map { (String(format: "l%03d", $0), CountTotals.Crossings(in: 1, out: 0)) }))
        let a = BoxAnalytics(tracker: TrackerSettings(), lines: [Self.door], kept: t)
        let labels = a.totals.lines["door"]!.labels
        #expect(labels.count == CountedLabel.maxLabels + 1 && labels[CountedLabel.other]?.in == 100 - CountedLabel.maxLabels && labels["l000"]?.in == 1)
    }
}
