import CVHostLines
import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostOutput

@Suite("An output's events=")
struct EventSelectionTests {
    @Test("names and globs joined by +: what each admits")
    func admits() throws {
        let s = try EventSelection(parsing: "line.crossed+zone.*+clip.saved+analytics.?ummary")
        for event in ["line.crossed", "zone.entered", "zone.occupancy", "clip.saved", "analytics.summary"] { #expect(s.admits(event), "\(event)") }
        for event in ["result", "metrics", "track.started", "line.crossedx", "session.started", "analytics.changed"] { #expect(!s.admits(event), "\(event)") }
        #expect(try EventSelection(parsing: "*").admits("result"))
    }

    @Test("refused, with what to write: an empty pattern, characters that are no event's, a name no event has (the list given)")
    func refusals() throws {
        for text in ["", "line.crossed+", "+zone.*", "Line.crossed", "zone.[ae]*", "line crossed", String(repeating: "a", count: 65)] {
            #expect(throws: OutputDestination.ParseError.self, "\(text)") { try EventSelection(parsing: text) }
        }
        do {
            _ = try EventSelection(parsing: "line.crossed+line.crosed")
            Issue.record("line.crosed taken")
        } catch {
            #expect(error.description.contains("'line.crosed' is no event cvhost writes") && error.description.contains("line.crossed, analytics.summary"),
                    "\(error)")
        }
    }

    @Test("on every output but stdout, through --output; a sink that has no such option says which it has")
    func onOutputs() throws {
        guard case .file(let f) = try OutputDestination(parsing: "file:/tmp/x.jsonl?events=line.*") else { Issue.record("not a file"); return }
        #expect(f.queue.events?.patterns == ["line.*"])
        guard case .nats(let n) = try OutputDestination(parsing: "nats://h/s?events=clip.saved+zone.*&spool=/s") else { Issue.record("not nats"); return }
        #expect(n.queue.events?.patterns == ["clip.saved", "zone.*"] && n.queue.spool?.folder == "/s")
        guard case .mqtt(let m) = try OutputDestination(parsing: "mqtt://h") else { Issue.record("not mqtt"); return }
        #expect(m.queue.events == nil)
        #expect(throws: OutputDestination.ParseError.self) { try OutputDestination(parsing: "kafka://k/t?events=reslut") }
    }

    @Test("the vocabulary is the schema's: every event the schema's enum has, and no other")
    func vocabularyIsTheSchemas() throws {
        let schema = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: PluginFixtures.packageRoot
            + "/schema/cvhost-events.schema.json"))) as? [String: Any])
        let events = try #require(((schema["properties"] as? [String: Any])?["event"] as? [String: Any])?["enum"] as? [String])
        #expect(Set(events) == Set(EventNames.all) && events.count == EventNames.all.count)
    }
}
