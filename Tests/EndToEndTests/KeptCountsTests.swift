import CVHostTestSupport
import Foundation
import Glibc
import Testing

/// Issue 60's totals that survive, through the binary: with `--state`, each line's and zone's
/// counts go on after a restart (session.started carries them, /metrics starts from them, GET
/// /analytics gives them), a line moved starts anew, `reset_counts` (POST /analytics/reset) and
/// the daily `--reset-counts-at` set them back to 0.
@Suite("Counts kept across restarts, and inputs down at start")
struct KeptCountsTests {
    static let line = "door=160,0 160,240"
    static let zone = "right=170,0 320,0 320,240 170,240"

    /// A folder of cvhost's own for the state file.
    static func stateFolder() -> String {
        let folder = TestFolders.make("kept-counts")
        chmod(folder, 0o700)
        return folder
    }

    /// The walker (10 px a frame across a 320x240 frame: over the door at frame 14, into the zone), `frames` frames unpaced.
    static func run(_ folder: String, line: String = line, _ extra: [String] = []) throws -> CommandResult {
        try CVHostBinary.run(["run", "--plugin", try AnalyticsTests.walker(), "--input", "cam=testsrc:320x240@10:unpaced", "--max-frames", "26",
                              "--metrics-interval", "0", "--track", "walker", "--line", line, "--zone", zone, "--state", folder + "/state.json"] + extra,
                             environment: AnalyticsTests.python)
    }

    static func crossed(_ r: CommandResult) -> [[String: Any]] { r.events("line.crossed").compactMap { $0["data"] as? [String: Any] } }

    static func kept(_ folder: String) -> [String: Any] {
        let data = FileManager.default.contents(atPath: folder + "/state.totals.json") ?? Data()
        return (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }

    static func keptLine(_ folder: String) -> [String: Any]? {
        (((kept(folder)["inputs"] as? [String: Any])?["cam"] as? [String: Any])?["walker"] as? [String: Any])
            .flatMap { ($0["lines"] as? [String: Any])?["door"] as? [String: Any] }?["labels"] as? [String: Any]
    }

    @Test("with --state, a line's and a zone's counts go on after a restart (the crossing says in 2, session.started starts from 1, the summary's entries 2); a line moved starts anew")
    func restart() throws {
        let folder = Self.stateFolder()
        let first = try Self.run(folder)
        #expect(first.exitCode == 0, "\(first.stderr)")
        #expect(Self.crossed(first).map { $0["in"] as? Int } == [1])
        #expect((Self.keptLine(folder)?["person"] as? [String: Any])?["in"] as? Int == 1, "\(Self.kept(folder))")
        var info = stat()
        #expect(stat(folder + "/state.totals.json", &info) == 0 && info.st_mode & 0o777 == 0o600)

        let second = try Self.run(folder)
        #expect(second.exitCode == 0, "\(second.stderr)")
        #expect(Self.crossed(second).map { [$0["in"] as? Int, $0["total_in"] as? Int] } == [[2, 2]], "\(Self.crossed(second))")
        let started = second.events("session.started").first?["plugins"] as? [[String: Any]]
        let startLine = ((started?.first?["analytics"] as? [String: Any])?["lines"] as? [[String: Any]])?.first
        #expect((startLine?["counts"] as? [String: Any])?["in"] as? Int == 1, "\(startLine ?? [:])")
        let summary = second.events("analytics.summary").first?["data"] as? [String: Any]
        #expect(((summary?["zones"] as? [[String: Any]])?.first?["total_entries"] as? Int) == 2, "\(summary ?? [:])")
        #expect(try CVHostBinary.schemaProblems(second.stdout) == nil)

        let moved = try Self.run(folder, line: "door=150,0 150,240")
        #expect(Self.crossed(moved).map { $0["in"] as? Int } == [1], "\(Self.crossed(moved))")
    }

    @Test("counts kept from before are where a user reads them at start (/metrics, GET /analytics); POST /analytics/reset sets them back (analytics.changed reset for the line and the zone, the kept file too); refusals")
    func resetOverHTTP() throws {
        let folder = Self.stateFolder()
        // Counts of an earlier run: the door's 5 in, the zone's 3 entries (of the same shapes).
        let line = "door=280,0 280,240"
        try """
            {"version":1,"inputs":{"cam":{"walker":{
              "lines":{"door":{"points":[[280,0],[280,240]],"units":"pixels","in":"left","labels":{"person":{"in":5,"out":0}}}},
              "zones":{"right":{"points":[[170,0],[320,0],[320,240],[170,240]],"units":"pixels","labels":{"person":{"entered":3}}}}}}}}
            """.write(toFile: folder + "/state.totals.json", atomically: true, encoding: .utf8)
        chmod(folder + "/state.totals.json", 0o600)
        let port = freeLoopbackPort()
        var metrics = "", analytics: [String: Any] = [:]
        var answers: [String: (status: Int, json: [String: Any])] = [:]
        // 5 frames a second: the walker's anchor reaches x=280 at frame 25, 5 s in.
        let r = try CVHostBinary.run(["run", "--plugin", try AnalyticsTests.walker(), "--input", "cam=testsrc:320x240@5", "--max-frames", "32",
                                      "--metrics-interval", "0", "--track", "walker", "--line", line, "--zone", Self.zone,
                                      "--state", folder + "/state.json", "--http", "127.0.0.1:\(port)", "--http-linger", "0"],
                                     timeout: 120, environment: AnalyticsTests.python, withStdin: false) { run in
            guard run.wait(until: { $0.contains("\"event\":\"track.started\"") }) else { return }
            metrics = (try? LiveViewTests.http(port, "/metrics").body) ?? ""
            analytics = (try? RunChangesTests.send(port, "GET", "/analytics").json["result"] as? [String: Any]) ?? [:]
            answers["no line"] = try? RunChangesTests.send(port, "POST", "/analytics/reset", #"{"line":"gate"}"#)
            answers["no input"] = try? RunChangesTests.send(port, "POST", "/analytics/reset", #"{"source":"yard"}"#)
            answers["both"] = try? RunChangesTests.send(port, "POST", "/analytics/reset", #"{"line":"door","zone":"right"}"#)
            answers["get"] = try? RunChangesTests.send(port, "GET", "/analytics/reset")
            answers["reset"] = try? RunChangesTests.send(port, "POST", "/analytics/reset", "")
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(LiveViewTests.sample(metrics, "cvhost_line_crossings_total", ["line": "door", "direction": "in", "label": "person"]) == 5)
        #expect(LiveViewTests.sample(metrics, "cvhost_zone_entries_total", ["zone": "right", "label": "person"]) == 3)
        let counts = (analytics["counts"] as? [[String: Any]])?.first
        #expect(counts?["source"] as? String == "cam" && counts?["plugin"] as? String == "walker", "\(analytics)")
        #expect(((counts?["lines"] as? [String: Any])?["door"] as? [String: Any])?["in"] as? Int == 5, "\(analytics)")
        #expect(((counts?["zones"] as? [String: Any])?["right"] as? [String: Any])?["entered"] as? Int == 3, "\(analytics)")
        #expect(answers["no line"]?.status == 404 && answers["no input"]?.status == 404 && answers["both"]?.status == 400, "\(answers)")
        #expect(answers["get"]?.status == 404 || answers["get"]?.status == 405, "\(answers["get"].map { "\($0)" } ?? "")")
        let reset = answers["reset"]?.json["result"] as? [String: Any]
        #expect(answers["reset"]?.status == 200 && reset?["lines"] as? [String] == ["door"] && reset?["zones"] as? [String] == ["right"],
                "\(answers["reset"].map { "\($0)" } ?? "")")
        let changes = r.events("analytics.changed").map { "\($0["kind"] ?? "") \($0["name"] ?? "") \($0["change"] ?? "") \($0["by"] ?? "")" }
        #expect(changes == ["line door reset http", "zone right reset http"], "\(changes)")
        // Counted from 0 after the reset: the crossing says in 1, and so does the file at the end.
        #expect(Self.crossed(r).map { $0["in"] as? Int } == [1], "\(Self.crossed(r))")
        #expect((Self.keptLine(folder)?["person"] as? [String: Any])?["in"] as? Int == 1, "\(Self.kept(folder))")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
    }

    @Test("--reset-counts-at: counts kept since before its last time (cvhost stopped across it) start at 0, said; a time that is none refused (exit 64)")
    func dailyReset() throws {
        let folder = Self.stateFolder()
        let threeDaysAgo = Int(Date().timeIntervalSince1970) - 3 * 86_400
        try """
            {"version":1,"reset":\(threeDaysAgo),"inputs":{"cam":{"walker":{
              "lines":{"door":{"points":[[160,0],[160,240]],"units":"pixels","in":"left","labels":{"person":{"in":5,"out":0}}}}}}}}
            """.write(toFile: folder + "/state.totals.json", atomically: true, encoding: .utf8)
        chmod(folder + "/state.totals.json", 0o600)
        let r = try Self.run(folder, ["--reset-counts-at", "00:00"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(Self.crossed(r).map { $0["in"] as? Int } == [1], "\(Self.crossed(r))")
        #expect(r.stderr.contains("older than the last --reset-counts-at 00:00"), "\(r.stderr)")
        #expect((Self.kept(folder)["reset"] as? Double ?? 0) > Double(threeDaysAgo + 86_400))
        // The next run (its counts reset since 00:00) goes on from them.
        let next = try Self.run(folder, ["--reset-counts-at", "00:00"])
        #expect(Self.crossed(next).map { $0["in"] as? Int } == [2], "\(Self.crossed(next))")

        let bad = try Self.run(folder, ["--reset-counts-at", "25:00"])
        #expect(bad.exitCode == 64 && bad.stderr.contains("--reset-counts-at 25:00: give a local time of day as HH:MM"), "\(bad.stderr)")
    }

    @Test("an input added while running and kept by --state whose camera is down at the next start: without --reconnect, exit 3 names the state file's entry and how to start without it; with --reconnect, the others run")
    func keptInputDown() throws {
        let folder = Self.stateFolder()
        let url = "rtsp://127.0.0.1:\(freeLoopbackPort())/gone"
        try """
            {"version":1,"inputs":{"yard":{"input":"\(url)"}},"zones":{},"lines":{},"tracks":{}}
            """.write(toFile: folder + "/state.json", atomically: true, encoding: .utf8)
        chmod(folder + "/state.json", 0o600)
        let refused = try CVHostBinary.run(["run", "--plugin", "null", "--input", "base=testsrc:160x120@10:unpaced", "--max-frames", "5",
                                            "--metrics-interval", "0", "--state", folder + "/state.json"], timeout: 60)
        #expect(refused.exitCode == 3, "\(refused.stderr)")
        #expect(refused.stderr.contains("input yard was added or changed while cvhost ran and is kept by --state \(folder)/state.json: drop its entry \"yard\""),
                "\(refused.stderr)")
        let reconnecting = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "base=testsrc:160x120@10", "--max-frames", "5",
                                                 "--metrics-interval", "0", "--state", folder + "/state.json", "--reconnect", "--duration", "3"],
                                                timeout: 60)
        #expect(reconnecting.events.contains { $0["event"] as? String == "result" && $0["source"] as? String == "base" }, "\(reconnecting.stderr)")
        #expect(reconnecting.stderr.contains("Connection refused: --reconnect tries again"), "\(reconnecting.stderr)")
    }

    @Test("a camera (--device) that is not there at start, with --reconnect: the other input runs, the camera's starts interrupted (format null) and is waited for; GET /inputs says reconnecting; without --reconnect, exit 3")
    func cameraAwaited() throws {
        let port = freeLoopbackPort()
        var inputs: [String: Any] = [:]
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "base=testsrc:160x120@10", "--device", "cam=/dev/video63",
                                      "--reconnect", "--metrics-interval", "0", "--http", "127.0.0.1:\(port)"], timeout: 60, withStdin: false) { run in
            defer { kill(run.pid, SIGTERM) }
            guard run.wait(until: { !RunChangesTests.of(RunChangesTests.lines($0), "session.interrupted", source: "cam").isEmpty
                                        && !RunChangesTests.of(RunChangesTests.lines($0), "result", source: "base").isEmpty }) else { return }
            inputs = (try? RunChangesTests.send(port, "GET", "/inputs/cam").json["result"] as? [String: Any]) ?? [:]
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(r.stderr.contains("camera /dev/video63 not found or not a V4L2 device") && r.stderr.contains("--reconnect waits for it"), "\(r.stderr)")
        let started = r.events.first { $0["event"] as? String == "session.started" && $0["source"] as? String == "cam" }
        #expect(started?["format"] is NSNull, "\(started ?? [:])")
        #expect("\(inputs)".contains("reconnecting"), "\(inputs)")
        #expect(r.events("session.stopped").count == 2)
        let refused = try CVHostBinary.run(["run", "--plugin", "null", "--device", "/dev/video63", "--max-frames", "1"], timeout: 60)
        #expect(refused.exitCode == 3 && refused.stderr.contains("not found"), "\(refused.stderr)")
    }
}
