import CVHostTestSupport
import Foundation
import Testing

/// `--events-db` and `GET /history` through the binary: the events of a run kept in a real SQLite
/// file with their snapshots, queried and paged over HTTP, across a restart; a file another run
/// holds, a damaged one, a bad query.
@Suite("The event store through the binary", .serialized)
struct EventHistoryTests {
    static func history(_ port: Int, _ query: String) throws -> (status: Int, json: [String: Any]) {
        let r = try LiveViewTests.http(port, "/history" + query)
        return (r.status, (try? JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any]) ?? ["body": r.body])
    }

    /// A run of the walker over a line (a crossing a lap) with snapshots of the crossings and the
    /// store beside them; `look` sees it while it runs.
    static func run(_ folder: String, extra: [String] = [], look: @escaping (RunningCVHost, Int) -> Void) throws -> CommandResult {
        let port = freeLoopbackPort()
        return try CVHostBinary.run(["run", "--plugin", try AnalyticsTests.walker(lap: 20), "--input", "door=testsrc:320x240@20", "--track", "walker",
                                     "--line", "entrance=160,0 160,240:in=left", "--snapshots", folder + "/snapshots:on=line.crossed",
                                     "--http", "127.0.0.1:\(port)", "--metrics-interval", "0"] + extra,
                                    timeout: 120, environment: AnalyticsTests.python, withStdin: false) { run in
            defer { kill(run.pid, SIGTERM) }
            look(run, port)
        }
    }

    @Test("each crossing is a row with its snapshot, newest first, paged; /snapshots' entries name their events; a restart keeps the rows and adds its own")
    func historyOfARun() throws {
        let folder = TestFolders.make("history")
        var first: (status: Int, json: [String: Any]) = (0, [:]), second = first, listed = ""
        var refused = (status: 0, json: [String: Any]())
        let r = try Self.run(folder) { run, port in
            guard run.wait(timeout: 60, until: { $0.components(separatedBy: #""event":"line.crossed""#).count > 3 }) else { return }
            // The recorder writes behind the lines: wait for the rows, not a time.
            let deadline = Date().addingTimeInterval(30)
            repeat {
                first = (try? Self.history(port, "?event=line.crossed&limit=2")) ?? (0, [:])
                if (first.json["events"] as? [Any])?.count == 2 { break }
                usleep(200_000)
            } while Date() < deadline
            if let next = first.json["next_before"] as? Int { second = (try? Self.history(port, "?event=line.crossed&limit=2&before=\(next)")) ?? (0, [:]) }
            listed = (try? LiveViewTests.http(port, "/snapshots").body) ?? ""
            refused = (try? Self.history(port, "?since=yesterday")) ?? (0, [:])
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(first.status == 200, "\(first)")
        let rows = (first.json["events"] as? [[String: Any]] ?? []) + (second.json["events"] as? [[String: Any]] ?? [])
        #expect(rows.count >= 3, "\(first) \(second)")
        let ids = rows.compactMap { $0["id"] as? Int }
        #expect(ids == ids.sorted(by: >) && Set(ids).count == ids.count, "newest first, each once: \(ids)")
        let crossed = Dictionary(r.events("line.crossed").compactMap { e in (e["event_id"] as? String).map { ($0, e) } }, uniquingKeysWith: { a, _ in a })
        for row in rows {
            let line = try #require(row["line"] as? [String: Any])
            let id = try #require(line["event_id"] as? String)
            // The row is the line stdout had, with its snapshot, which exists.
            #expect(crossed[id]?["snapshot"] as? String == line["snapshot"] as? String, "\(id)")
            let snapshot = try #require(row["snapshot"] as? [String: Any])
            #expect(snapshot["exists"] as? Bool == true && (snapshot["url"] as? String)?.contains("/snapshots/") == true, "\(snapshot)")
        }
        let entries = (try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [String: Any])?["snapshots"] as? [[String: Any]] ?? []
        #expect(!entries.isEmpty && entries.allSatisfy { (($0["events"] as? [[String: Any]])?.first?["line"] as? String) == "entrance" }, "\(listed)")
        #expect(refused.status == 400 && (refused.json["error"] as? String)?.contains("since=yesterday") == true, "\(refused)")
        let kept = r.events("line.crossed").count

        // The next run on the same store: the first run's rows are there, its own come after them.
        var all: [[String: Any]] = []
        let again = try Self.run(folder) { run, port in
            guard run.wait(timeout: 60, until: { $0.contains(#""event":"line.crossed""#) }) else { return }
            let deadline = Date().addingTimeInterval(30)
            repeat {
                all = ((try? Self.history(port, "?event=line.crossed&limit=1000"))?.json["events"] as? [[String: Any]]) ?? []
                if all.count > kept { break }
                usleep(200_000)
            } while Date() < deadline
        }
        #expect(again.exitCode == 0, "\(again.stderr)")
        let sessions = Set(all.compactMap { ($0["line"] as? [String: Any])?["session"] as? String })
        #expect(all.count > kept && sessions.count == 2, "\(all.count) rows of \(sessions.count) runs, \(kept) from the first")
    }

    @Test("the page's history: the input's crossings with their snapshots (thumbnails, loaded), a clip that opens at its event's moment")
    func historyOnThePage() throws {
        let folder = TestFolders.make("history")
        var page: [String] = [], rows: [[String: Any]] = [], at: Double?
        let r = try Self.run(folder, extra: ["--clips", folder + "/clips:on=line.crossed,pre=1,post=1"]) { run, port in
            guard run.wait(timeout: 90, until: { $0.contains(#""event":"clip.saved""#) }) else { return }
            let deadline = Date().addingTimeInterval(30)
            repeat {
                rows = ((try? Self.history(port, "?event=line.crossed"))?.json["events"] as? [[String: Any]]) ?? []
                if rows.contains(where: { ($0["clip"] as? [String: Any])?["exists"] as? Bool == true }) { break }
                usleep(200_000)
            } while Date() < deadline
            let listed = "(() => { const items = [...document.querySelectorAll('#history li')]; "
                + "const t = items.filter(li => { const i = li.querySelector('img.thumb'); return i && i.complete && i.naturalWidth > 0 }).length; "
                + "const c = document.querySelector('#history a.history-clip'); return t >= 1 && c ? [String(t), c.getAttribute('href')] : null })()"
            page = PageProbe.value("http://127.0.0.1:\(port)/", listed, as: [String].self) ?? []
            guard page.count == 2 else { return }
            let played = "(() => { const v = document.querySelector('video'); return v && v.readyState >= 1 && !v.seeking ? v.currentTime : null })()"
            at = PageProbe.value("http://127.0.0.1:\(port)/" + page[1], played, as: Double.self)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(rows.contains { ($0["clip"] as? [String: Any])?["exists"] as? Bool == true }, "\(rows)")
        #expect(page.count == 2 && page[1].hasPrefix("clips/") && page[1].contains("#t="), "\(page)")
        // The browser opened the clip at the moment the link names (where in the clip its event is).
        let asked = Double(page.last?.components(separatedBy: "#t=").last ?? "") ?? -1
        #expect(asked >= 0 && abs((at ?? -10) - asked) < 0.25, "opened at \(at ?? -1) s, asked \(asked) s")
    }

    @Test("a store another run holds: exit 5 naming it; a damaged store: set aside, said, and the run goes on; --events-db off keeps none (404)")
    func refusals() throws {
        let folder = TestFolders.make("history")
        let path = folder + "/events.sqlite"
        var second: CommandResult?
        let r = try Self.run(folder, extra: ["--events-db", path]) { run, _ in
            guard run.wait(timeout: 60, until: { $0.contains(#""event":"result""#) }) else { return }
            second = try? CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "--max-frames", "1", "--events-db", path])
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(second?.exitCode == 5 && second?.stderr.contains("the event store \(path) is another cvhost run's (pid ") == true, "\(second?.stderr ?? "")")

        let damaged = folder + "/damaged.sqlite"
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: damaged))
        let d = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "testsrc", "--max-frames", "2", "--events-db", damaged])
        #expect(d.exitCode == 0 && d.stderr.contains("the event store \(damaged) was damaged") && d.stderr.contains("set aside as"), "\(d.stderr)")

        var none = 0
        _ = try Self.run(folder, extra: ["--events-db", "off"]) { run, port in
            guard run.wait(timeout: 60, until: { $0.contains(#""event":"result""#) }) else { return }
            none = (try? Self.history(port, ""))?.status ?? 0
        }
        #expect(none == 404)
        #expect(!FileManager.default.fileExists(atPath: folder + "/snapshots/events.sqlite"))
    }
}
