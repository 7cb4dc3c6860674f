import CVHostAnalytics
import CVHostLines
import Foundation
import Testing
@testable import CVHostRun

/// Zones, lines and boxes from outside kept within what a frame's analytics can afford: a zone of
/// tens of thousands of points (its outline check grows with their square), thousands of zones,
/// a box whose coordinates overflow.
@Suite("Analytics within bounds")
struct AnalyticsBoundsTests {
    @Test("a zone of 30,000 points and 101 zones are refused at once, naming the bound")
    func zonesBounded() {
        let many = (0..<30_000).map { i -> String in
            let a = Double(i) / 30_000 * 2 * Double.pi
            return "\(Int(500 + 400 * cos(a))),\(Int(500 + 400 * sin(a)))"
        }.joined(separator: " ")
        // Refused before its outline is checked (which took 14 s).
        #expect(RunSettingsTests.refusal { try AnalyticsSettings(track: ["detect"], zones: ["big=" + many], lines: []) }
            .contains("a zone has at most 1000 points, this one 30000"))
        let zones = (0...AnalyticsSettings.most).map { "z\($0)=0,0 10,0 10,10" }
        #expect(RunSettingsTests.refusal { try AnalyticsSettings(track: ["detect"], zones: zones, lines: []) }
            .contains("--zone is given 101 times: at most 100"))
    }

    @Test("a box whose coordinates are past any frame (x + width overflows) is not tracked")
    func hugeBoxes() throws {
        func result(_ bounds: String) throws -> OutputLine.Result {
            let fields = try JSONValidator.checkedResult("{\"bounds\":\(bounds)}").fields
            return OutputLine.Result(type: "object", fields: fields, dataStart: 0)
        }
        #expect(try Detection(result(#"{"x":10,"y":20,"width":30,"height":40}"#)) != nil)
        #expect(try Detection(result(#"{"x":1e308,"y":0,"width":1e308,"height":40}"#)) == nil)
        #expect(try Detection(result(#"{"x":10,"y":20,"width":3e7,"height":40}"#)) == nil)
    }
}
