import CVHostLines
import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostEvents

/// The event store on real SQLite files: what it keeps of the lines, the queries and their pages,
/// a clip named in the events it holds, files gone, old rows pruned, a damaged file set aside,
/// another run's file, a newer format.
@Suite("The event store")
struct EventStoreTests {
    static func crossing(_ source: String, line: String, ts: Double, track: Int, direction: String = "in", snapshot: String? = nil) -> OutputLine {
        var e = JSONObject.envelope(event: "line.crossed", source: source, plugin: "walker", tsNs: Int64(ts * 1e9))
        var d = JSONObject()
        d.set("line", line)
        d.set("track_id", track)
        d.set("label", "person")
        d.set("direction", direction)
        e.set("data", object: d)
        let l = e.line()
        return snapshot.map { l.with(envelopeField: "snapshot", $0) } ?? l
    }

    static func plain(_ event: String, _ source: String, ts: Double, _ fill: (inout JSONObject) -> Void = { _ in }) -> OutputLine {
        var e = JSONObject.envelope(event: event, source: source, tsNs: Int64(ts * 1e9))
        var d = JSONObject()
        fill(&d)
        e.set("data", object: d)
        return e.line()
    }

    static func answer(_ store: EventStore, _ query: [String: String]) throws -> (events: [[String: Any]], next: Int?) {
        let text = try store.answer(try EventQuery(query: query), urlBase: "http://cam-host.lan:8080")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        return (o["events"] as? [[String: Any]] ?? [], o["next_before"] as? Int)
    }

    @Test("kept: crossings, zone and track events, clips, inputs' states; not results, metrics, occupancy; each once by its event_id")
    func whatIsKept() throws {
        let store = try EventStore(path: TestFolders.make("events") + "/e.sqlite")
        let now = Date().timeIntervalSince1970
        let lines = [
            Self.crossing("door", line: "entrance", ts: now, track: 1),
            Self.plain("result", "door", ts: now), Self.plain("metrics", "door", ts: now), Self.plain("zone.occupancy", "door", ts: now),
            Self.plain("zone.entered", "door", ts: now) { $0.set("zone", "desk") }, Self.plain("track.ended", "door", ts: now),
            Self.plain("session.started", "door", ts: now), Self.plain("input.removed", "door", ts: now),
        ]
        #expect(try store.record(lines) == 5)
        // Written twice (a line resent): one row.
        try store.record([lines[0]])
        #expect(store.count == 5)
        let zone = try Self.answer(store, ["zone": "desk"]).events
        #expect(zone.count == 1 && (zone.first?["line"] as? [String: Any])?["event"] as? String == "zone.entered")
    }

    @Test("queries by input, line, label, track, time; newest first; paged by before=, each page's next")
    func queriesAndPages() throws {
        let store = try EventStore(path: TestFolders.make("events") + "/e.sqlite")
        let t0 = Date().timeIntervalSince1970 - 100
        try store.record((0..<25).map { i in Self.crossing(i % 2 == 0 ? "door" : "gate", line: i % 5 == 0 ? "exit" : "entrance", ts: t0 + Double(i), track: i) })
        let door = try Self.answer(store, ["source": "door", "limit": "5"])
        #expect(door.events.count == 5 && door.next != nil)
        let tracks = door.events.compactMap { (($0["line"] as? [String: Any])?["data"] as? [String: Any])?["track_id"] as? Int }
        #expect(tracks == [24, 22, 20, 18, 16], "\(tracks)")
        // Every page in turn: each door event once, in order.
        var seen: [Int] = [], before = door.next
        seen += tracks
        while let b = before {
            let page = try Self.answer(store, ["source": "door", "limit": "5", "before": "\(b)"])
            seen += page.events.compactMap { (($0["line"] as? [String: Any])?["data"] as? [String: Any])?["track_id"] as? Int }
            before = page.next
        }
        #expect(seen == Array(stride(from: 24, through: 0, by: -2)), "\(seen)")
        #expect(try Self.answer(store, ["line": "exit"]).events.count == 5)
        #expect(try Self.answer(store, ["track": "7"]).events.count == 1)
        #expect(try Self.answer(store, ["since": "\(t0 + 10)", "until": "\(t0 + 20)"]).events.count == 10)
        #expect(try Self.answer(store, ["label": "car"]).events.isEmpty)
    }

    @Test("a clip.saved names its clip in the events it holds, with where in it each is; a file gone is said, its row kept; its URLs under the address given")
    func clipsAndFiles() throws {
        let folder = TestFolders.make("events")
        let store = try EventStore(path: folder + "/e.sqlite")
        let now = Date().timeIntervalSince1970
        let snapshot = folder + "/door-1-line_crossed.jpg"
        _ = FileManager.default.createFile(atPath: snapshot, contents: Data([0xFF, 0xD8]))
        let crossing = Self.crossing("door", line: "entrance", ts: now, track: 1, snapshot: snapshot)
        let id = try #require(try JSONSerialization.jsonObject(with: Data(crossing.bytes)) as? [String: Any])["event_id"] as? String
        try store.record([crossing])
        try store.record([Self.plain("clip.saved", "door", ts: now + 12) { d in
            d.set("path", folder + "/door-clip.mp4")
            d.set("file", "door-clip.mp4")
            d.setSeconds("start_ts", nanoseconds: Int64((now - 5) * 1e9))
            d.set("events", strings: [id ?? ""])
        }])
        let row = try #require(try Self.answer(store, ["event": "line.crossed"]).events.first)
        let snap = try #require(row["snapshot"] as? [String: Any]), clip = try #require(row["clip"] as? [String: Any])
        #expect(snap["exists"] as? Bool == true && snap["url"] as? String == "http://cam-host.lan:8080/snapshots/door-1-line_crossed.jpg")
        #expect(clip["exists"] as? Bool == false && clip["url"] as? String == "http://cam-host.lan:8080/clips/door-clip.mp4")
        #expect(abs((clip["offset"] as? Double ?? 0) - 5) < 0.01, "\(clip)")
        // /snapshots' entry of that file names its event.
        let named = store.events(ofFile: "door-1-line_crossed.jpg", kind: "snapshots").map { String(decoding: $0.finished(), as: UTF8.self) }
        #expect(named.count == 1 && named[0].contains(#""line":"entrance""#) && named[0].contains(#""direction":"in""#), "\(named)")
        #expect(store.events(ofFile: "door-clip.mp4", kind: "clips").count == 1)
        // The snapshot deleted (the evidence's budget): the row stays, the file is said gone.
        try FileManager.default.removeItem(atPath: snapshot)
        let after = try #require(try Self.answer(store, ["event": "line.crossed"]).events.first)
        #expect((after["snapshot"] as? [String: Any])?["exists"] as? Bool == false)
    }

    @Test("rows older than the store's age are pruned; a restart keeps the rest and goes on")
    func pruneAndRestart() throws {
        let path = TestFolders.make("events") + "/e.sqlite"
        let now = Date().timeIntervalSince1970
        do {
            let store = try EventStore(path: path, maxAgeSeconds: 3600)
            try store.record([Self.crossing("door", line: "a", ts: now - 7200, track: 1), Self.crossing("door", line: "a", ts: now - 60, track: 2)])
            #expect(store.prune() == 1 && store.count == 1)
        }
        let again = try EventStore(path: path, maxAgeSeconds: 3600)
        try again.record([Self.crossing("door", line: "a", ts: now, track: 3)])
        #expect(again.count == 2)
        let ids = try Self.answer(again, [:]).events.compactMap { $0["id"] as? Int }
        #expect(ids.count == 2 && ids[0] > ids[1])
    }

    @Test("a damaged file is set aside and a new store begun (said); another run's file is refused naming its pid; a newer format is refused, untouched")
    func refusalsAndDamage() throws {
        let folder = TestFolders.make("events")
        let damaged = folder + "/damaged.sqlite"
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: damaged))
        var said: [String] = []
        let store = try EventStore(path: damaged, said: { said.append($0) })
        #expect(said.count == 1 && said[0].contains("was damaged") && said[0].contains("set aside as \(damaged).damaged-"), "\(said)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).contains { $0.hasPrefix("damaged.sqlite.damaged-") })
        try store.record([Self.crossing("door", line: "a", ts: Date().timeIntervalSince1970, track: 1)])
        #expect(store.count == 1)
        do {
            _ = try EventStore(path: damaged)
            Issue.record("a second store on one file")
        } catch {
            #expect(error.description.contains("is another cvhost run's (pid \(getpid()))"), "\(error)")
        }
        let newer = folder + "/newer.sqlite"
        try Tool.check("sqlite3", [newer, "PRAGMA user_version = 9; CREATE TABLE x (y)"])
        do {
            _ = try EventStore(path: newer)
            Issue.record("a newer format taken")
        } catch {
            #expect(error.description.contains("written by a newer cvhost (format 9"), "\(error)")
        }
        let fifo = folder + "/fifo"
        mkfifo(fifo, 0o600)
        #expect(throws: EventStore.OpenError.self) { try EventStore(path: fifo) }
    }

    @Test("GET /history's parameters: each checked, one reason naming it")
    func queryRefusals() throws {
        let q = try EventQuery(query: ["source": "door", "limit": "10", "since": "1764849600", "before": "5", "token": "t"])
        #expect(q.source == "door" && q.limit == 10 && q.since == 1_764_849_600 && q.before == 5)
        for (query, says) in [(["limit": "0"], "limit=0"), (["limit": "1001"], "limit=1001"), (["since": "yesterday"], "since=yesterday"),
                              (["until": "nan"], "until=nan"), (["before": "-1"], "before=-1"), (["track": "x"], "track=x"),
                              (["colour": "red"], "colour: no such parameter"), (["line": ""], "line=: give a value"),
                              (["since": "200", "until": "100"], "is before since")] {
            do {
                _ = try EventQuery(query: query)
                Issue.record("\(query) taken")
            } catch {
                #expect(error.description.contains(says), "\(query): \(error)")
            }
        }
    }
}
