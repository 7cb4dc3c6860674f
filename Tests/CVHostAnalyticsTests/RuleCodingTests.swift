import Foundation
import Testing
@testable import CVHostAnalytics

/// Zones, lines, masks, filters and tracks in their one JSON shape (RuleCoding): what GET
/// /analytics, session.started, the state file and an HTTP body have, checked as the text is.
@Suite("RuleCoding: one JSON shape, checked as the command line's text")
struct RuleCodingTests {
    static func json<R: AnalyticsRule>(_ rule: R) throws -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return String(decoding: try e.encode(rule), as: UTF8.self)
    }

    static func decode<R: AnalyticsRule>(_ type: R.Type, _ text: String) throws -> R {
        try JSONDecoder().decode(R.self, from: Data(text.utf8))
    }

    @Test("each kind's JSON is the value its text makes, and what it encodes decodes to the same value")
    func sameValue() throws {
        let zone = try AnalyticsSpec.zone("bay=10,10 200,10 200,200 10,200:dwell=30,anchor=center,min_frames=3,input=door,labels=person+car")
        #expect(try Self.decode(ZoneSettings.self, #"{"name":"bay","points":[[10,10],[200,10],[200,200],[10,200]],"dwell":30,"anchor":"center","min_frames":3,"input":"door","labels":["car","person"]}"#) == zone)
        #expect(try Self.decode(ZoneSettings.self, Self.json(zone)) == zone)
        let line = try AnalyticsSpec.line("gate=0.5,0 0.5,1:in=right,min_distance=4,labels=bus")
        #expect(try Self.decode(LineSettings.self, #"{"name":"gate","points":[[0.5,0],[0.5,1]],"in":"right","min_distance":4,"labels":"bus"}"#) == line)
        #expect(try Self.decode(LineSettings.self, Self.json(line)) == line)
        let lineJSON = try Self.json(line)
        #expect(line.fractions && lineJSON.contains(#""units":"fractions""#))
        let measured = try AnalyticsSpec.zone("road=100,400 540,400 620,470 20,470:distances=3.5,20,3.5,20,speed_unit=mph")
        #expect(try Self.decode(ZoneSettings.self, Self.json(measured)) == measured)
        let mask = try AnalyticsSpec.mask("tree=0,0 100,0 100,80:input=yard")
        #expect(try Self.decode(BoxMask.self, Self.json(mask)) == mask)
        let filter = try AnalyticsSpec.filter("car:min_score=0.6,min_area=0.01,max_ratio=4,input=door")
        #expect(try Self.decode(BoxFilter.self, #"{"label":"car","min_score":0.6,"min_area":0.01,"max_ratio":4,"input":"door"}"#) == filter)
        #expect(try Self.decode(BoxFilter.self, Self.json(filter)) == filter)
        for text in ["detect:high=0.5,low=0.2,by_label=true", "detect:lost=3"] {
            let track = try AnalyticsSpec.tracked(text)
            #expect(try Self.decode(AnalyticsSpec.Tracked.self, Self.json(track)) == track, "\(text)")
        }
    }

    @Test("a track whose high follows the plugin's says no high, and stays so when read back")
    func highFollows() throws {
        let track = try AnalyticsSpec.tracked("detect:lost=3")
        let text = try Self.json(track)
        #expect(!text.contains("high") && text.contains(#""plugin":"detect""#), "\(text)")
        #expect(try !Self.decode(AnalyticsSpec.Tracked.self, text).settings.highGiven)
    }

    @Test("a JSON object is refused with the reason its text would have, naming the rule")
    func refusals() throws {
        let cases: [(String, String)] = [
            (#"{"name":"bay","points":[[0,0],[1,0],[1,1]],"dwell":-1}"#, "zone bay: dwell is a number from 0 to 31536000, not '-1'"),
            (#"{"name":"bay","points":[[0,0],[1,0],[1,1]],"in":"left"}"#, #"a zone has no "in""#),
            (#"{"name":"bay","points":[[0,0],[1,0]]}"#, "zone bay:"),
            (#"{"name":"bay","dwell":3}"#, #"zone bay: give "points""#),
            (#"{"points":[[0,0],[1,0],[1,1]]}"#, #"a zone needs "name""#),
            (#"{"name":"bay","points":[[0,0],[1]]}"#, #"zone bay: "points" are [[x,y]"#),
            (#"{"name":"bay","points":[[0,0],[1,0],[1,1]],"labels":[]}"#, "zone bay: labels are names joined by +"),
            (#"{"name":"bay","points":[[0,0],[1,0],[1,1]],"anchor":"middle"}"#, "zone bay: anchor is one of bottom_center"),
            (#"{"name":"bay","points":[[0,0],[1,0],[1,1]],"input":"a b"}"#, "zone bay: input is a word"),
            (#"{"name":"bay","points":[[0,0],[1,0],[1,1]],"min_frames":{"a":1}}"#, #"zone bay: "min_frames" is a number"#),
        ]
        for (json, reason) in cases {
            do {
                _ = try Self.decode(ZoneSettings.self, json)
                Issue.record("taken: \(json)")
            } catch let p as AnalyticsSpec.Problem {
                #expect(p.description.contains(reason), "\(json): \(p.description)")
            }
        }
        #expect(throws: AnalyticsSpec.Problem.self) { try Self.decode(AnalyticsSpec.Tracked.self, #"{"plugin":"detect","low":0.5,"high":0.2}"#) }
        #expect(throws: AnalyticsSpec.Problem.self) { try Self.decode(AnalyticsSpec.Tracked.self, #"{"plugin":"detect","points":[[0,0],[1,1]]}"#) }
        #expect(throws: AnalyticsSpec.Problem.self) { try Self.decode(BoxFilter.self, #"{"label":"car"}"#) }
        #expect(throws: AnalyticsSpec.Problem.self) { try Self.decode(LineSettings.self, #"{"name":"gate","points":[[1,1],[1,1]]}"#) }
    }
}
