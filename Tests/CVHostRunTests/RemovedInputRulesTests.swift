import CVHostCore
import Testing
@testable import CVHostRun

/// A restart never fails for an earlier change: what watched an input a change removed is set aside.
@Suite("Zones and lines of a removed input")
struct RemovedInputRulesTests {
    @Test("a zone and a line of an input removed while running (--state) are set aside at the next start, named; one of an input never there is still refused")
    func setAside() throws {
        let a = try AnalyticsSettings(track: ["null"], zones: ["bay=0,0 1,0 1,1:input=door", "yard=0,0 1,0 1,1"],
                                      lines: ["gate=0,0 1,1:input=door"], inputs: ["base"], removed: ["door"])
        #expect(a.zones.map(\.name) == ["yard"] && a.lines.isEmpty)
        #expect(a.setAside == ["zone bay", "line gate"])
        #expect(String(decoding: AnalyticsJSON.json(a).finished(), as: UTF8.self).contains(#""set_aside":["zone bay","line gate"]"#))
        do {
            _ = try AnalyticsSettings(track: ["null"], zones: ["bay=0,0 1,0 1,1:input=dor"], lines: [], inputs: ["base"], removed: ["door"])
            Issue.record("a zone of an input never there was taken")
        } catch {
            #expect(error.description == "--zone bay=0,0 1,0 1,1:input=dor: input=dor: this run has no input called dor (its inputs: base; name one with --input NAME=...)",
                    "\(error)")
        }
    }
}
