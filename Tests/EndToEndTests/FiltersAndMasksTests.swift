import CVHostTestSupport
import Foundation
import Glibc
import Testing

/// Issue 60's filters and masks through the binary: boxes too small, too weak or inside a mask
/// are never tracked (counted by reason in analytics.summary and /metrics), a line with labels=
/// counts those labels only, the page draws the masks; every refusal one line, exit 64.
@Suite("Filters, masks and labels in a run")
struct FiltersAndMasksTests {
    static let folder = TestFolders.make("filters")

    /// Five objects walking right, 10 px a frame: a person (followed), a tiny person (under
    /// min_area), a weak car (0.3, under min_score), a car on the road (inside the mask), a truck.
    static func plugin() throws -> String {
        let path = folder + "/street.py"
        try """
            import cvhost

            class Street(cvhost.Plugin):
                api_version = (1, 0)
                name = "street"
                pixel_formats = ("gray8",)

                def process(self, frame):
                    x = 20 + 10 * frame.sequence
                    for label, confidence, y, w, h in [("person", 0.9, 100, 30, 60), ("person", 0.9, 10, 4, 8), ("car", 0.3, 60, 40, 30),
                                                       ("car", 0.9, 200, 40, 30), ("truck", 0.9, 20, 50, 30)]:
                        self.emit("object", {"label": label, "confidence": confidence, "bounds": {"x": x, "y": y, "width": w, "height": h}})
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func run(_ extra: [String], frames: Int = 26, input: String = "cam=testsrc:320x240@10:unpaced",
                    _ body: ((RunningCVHost) -> Void)? = nil) throws -> CommandResult {
        let args = ["run", "--plugin", try plugin(), "--input", input, "--max-frames", "\(frames)", "--metrics-interval", "0"] + extra
        if let body { return try CVHostBinary.run(args, timeout: 120, environment: AnalyticsTests.python, withStdin: false, onRunning: body) }
        return try CVHostBinary.run(args, environment: AnalyticsTests.python)
    }

    static let settings = ["--track", "street:high=0.25", "--line", "door=160,0 160,240", "--line", "people=160,0 160,240:labels=person",
                           "--filter", "person:min_area=100", "--filter", "*:min_score=0.5", "--mask", "road=0,220 320,220 320,240 0,240"]

    @Test("a tiny person, a weak car and a car on the masked road are never tracked (filtered_results by reason); the door counts the person and the truck, the line with labels=person the person alone")
    func filtered() throws {
        let r = try Self.run(Self.settings)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let crossed = r.events("line.crossed").compactMap { $0["data"] as? [String: Any] }.map { "\($0["line"] ?? "") \($0["label"] ?? "")" }
        #expect(crossed.sorted() == ["door person", "door truck", "people person"], "\(crossed)")
        let summary = try #require(r.events("analytics.summary").first?["data"] as? [String: Any])
        #expect(summary["filtered_results"] as? [String: Int] == ["min_area": 26, "min_score": 26, "mask": 26], "\(summary)")
        #expect(summary["tracks_started"] as? Int == 2, "\(summary)")
        let analytics = (r.events("session.started").first?["plugins"] as? [[String: Any]])?.first?["analytics"] as? [String: Any]
        #expect((analytics?["masks"] as? [[String: Any]])?.first?["name"] as? String == "road", "\(analytics ?? [:])")
        #expect((analytics?["lines"] as? [[String: Any]])?.last?["labels"] as? [String] == ["person"])
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
    }

    @Test("/metrics counts the filtered boxes by reason; GET /analytics lists the filters and masks; the page draws the mask over the picture")
    func shown() throws {
        let port = freeLoopbackPort()
        var metrics = "", analytics: [String: Any] = [:], dom = ""
        let r = try Self.run(Self.settings + ["--http", "127.0.0.1:\(port)"], frames: 600, input: "cam=testsrc:320x240@10") { run in
            defer { kill(run.pid, SIGTERM) }
            guard run.wait(until: { $0.contains("\"event\":\"line.crossed\"") }) else { return }
            metrics = (try? LiveViewTests.http(port, "/metrics").body) ?? ""
            analytics = (try? RunChangesTests.send(port, "GET", "/analytics").json["result"] as? [String: Any]) ?? [:]
            // Drawn over the streamed picture (what --dump-dom cannot wait for): the mask's polygon and its label.
            dom = PageProbe.value("http://127.0.0.1:\(port)/",
                                  "(m => m && m.nextSibling && m.nextSibling.textContent)(document.querySelector('#overlay polygon.mask[data-mask=\"road\"]'))",
                                  timeout: 60, as: String.self) ?? ""
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect((LiveViewTests.sample(metrics, "cvhost_filtered_results_total", ["reason": "mask"]) ?? 0) >= 1, "\(metrics.prefix(0))")
        #expect(LiveViewTests.sample(metrics, "cvhost_filtered_results_total", ["reason": "max_area"]) == 0)
        let filters = (analytics["filters"] as? [[String: Any]])?.map { $0["label"] as? String ?? "" }
        #expect(filters == ["person", "*"] && (analytics["masks"] as? [[String: Any]])?.first?["name"] as? String == "road", "\(analytics)")
        #expect(dom == "road (ignored)", "\(dom)")
    }

    @Test("refusals, one line each, exit 64: filters and masks without --track, a filter that refuses nothing or everything, an unknown option, a mask of two points, an input the run lacks")
    func refusals() throws {
        for (args, said) in [
            (["--filter", "person:min_score=0.5"], "add --track PLUGIN"),
            (["--track", "street", "--filter", "person"], "give what it refuses"),
            (["--track", "street", "--filter", "person:min_area=500,max_area=100"], "min_area (500) is above max_area (100)"),
            (["--track", "street", "--filter", "person:colour=red"], "no option 'colour'"),
            (["--track", "street", "--filter", "person:min_score=2"], "min_score is a number from 0 to 1"),
            (["--track", "street", "--mask", "m=0,0 10,10"], "at least 3 points"),
            (["--track", "street", "--mask", "m=0,0 10,0 10,10:input=yard"], "no input called yard"),
            (["--track", "street", "--line", "l=0,0 10,10:labels="], "is not key=value"),
        ] {
            let r = try Self.run(args, frames: 1)
            #expect(r.exitCode == 64 && r.stderr.contains(said), "\(args): \(r.stderr)")
        }
    }

    @Test("masks and filters set over HTTP while running (PUT /masks/NAME, /filters/LABEL) apply from the next frame, are listed, kept by --state for the next start; refusals 400 and 404")
    func setWhileRunning() throws {
        let folder = KeptCountsTests.stateFolder(), port = freeLoopbackPort()
        var answers: [String: (status: Int, json: [String: Any])] = [:], metrics = "", analytics: [String: Any] = [:]
        let track = ["--track", "street:high=0.25", "--line", "door=160,0 160,240", "--state", folder + "/state.json"]
        let r = try Self.run(track + ["--http", "127.0.0.1:\(port)"], frames: 600, input: "cam=testsrc:320x240@10") { run in
            defer { kill(run.pid, SIGTERM) }
            guard run.wait(until: { $0.contains("\"event\":\"track.started\"") }) else { return }
            answers["mask"] = try? RunChangesTests.send(port, "PUT", "/masks/road", #"{"points":[[0,220],[320,220],[320,240],[0,240]]}"#)
            answers["person"] = try? RunChangesTests.send(port, "PUT", "/filters/person", #"{"min_area":100}"#)
            answers["every"] = try? RunChangesTests.send(port, "PUT", "/filters/*", #"{"min_score":0.5}"#)
            answers["two points"] = try? RunChangesTests.send(port, "PUT", "/masks/bad", #"{"points":[[0,0],[1,1]]}"#)
            answers["stray"] = try? RunChangesTests.send(port, "PUT", "/filters/car", #"{"dwell":3}"#)
            answers["no filter"] = try? RunChangesTests.send(port, "DELETE", "/filters/bus")
            analytics = (try? RunChangesTests.send(port, "GET", "/analytics").json["result"] as? [String: Any]) ?? [:]
            // Applied from the next frame: the mask's first boxes kept out.
            for _ in 0..<50 where (LiveViewTests.sample(metrics, "cvhost_filtered_results_total", ["reason": "mask"]) ?? 0) < 1 {
                Thread.sleep(forTimeInterval: 0.2)
                metrics = (try? LiveViewTests.http(port, "/metrics").body) ?? ""
            }
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(answers["mask"]?.status == 201 && answers["person"]?.status == 201 && answers["every"]?.status == 201, "\(answers)")
        #expect(answers["two points"]?.status == 400 && answers["stray"]?.status == 400 && answers["no filter"]?.status == 404, "\(answers)")
        #expect((answers["stray"]?.json["error"] as? String)?.contains("a filter has no \"dwell\"") == true, "\(answers["stray"].map { "\($0)" } ?? "")")
        #expect((analytics["masks"] as? [[String: Any]])?.map { $0["name"] as? String } == ["road"], "\(analytics)")
        #expect(Set((analytics["filters"] as? [[String: Any]])?.compactMap { $0["label"] as? String } ?? []) == ["person", "*"], "\(analytics)")
        #expect((LiveViewTests.sample(metrics, "cvhost_filtered_results_total", ["reason": "mask"]) ?? 0) >= 1)
        let changed = r.events("analytics.changed").map { "\($0["kind"] ?? "") \($0["name"] ?? "") \($0["change"] ?? "")" }
        #expect(changed == ["mask road added", "filter person added", "filter * added"], "\(changed)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        // The next start has them, from the state file.
        let next = try Self.run(track, frames: 26)
        #expect(next.exitCode == 0, "\(next.stderr)")
        let summary = next.events("analytics.summary").first?["data"] as? [String: Any]
        #expect(summary?["filtered_results"] as? [String: Int] == ["min_area": 26, "min_score": 26, "mask": 26], "\(summary ?? [:])")
    }
}
