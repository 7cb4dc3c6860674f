import CVHostTestSupport
import Foundation
import Testing

/// `--track`, `--zone`, `--line` on a plugin's results, through the binary: track ids in results,
/// the tracks', zones' and lines' events as lines of their own (valid by the schema), from the
/// command line and a config file, and every refusal of settings that cannot be.
@Suite("Tracks, zones and lines in a run")
struct AnalyticsTests {
    static let folder = TestFolders.make("analytics")
    static let python = ["CVHOST_PYTHON": "/usr/bin/python3"]

    /// A plugin whose one box walks right across a 320x240 frame, `step` pixels a frame; with `lap`,
    /// from the left again every `lap` frames. (Frame 3 has a result with a track_id of its own too.)
    static func walker(lap: Int? = nil, step: Int = 10) throws -> String {
        let path = folder + (lap.map { "/walker-\($0)" } ?? "/walker") + (step == 10 ? "" : "-\(step)") + ".py"
        try """
            import cvhost

            class Walker(cvhost.Plugin):
                api_version = (1, 0)
                name = "walker"
                pixel_formats = ("gray8",)

                def process(self, frame):
                    x = 20 + \(step) * \(lap.map { "(frame.sequence % \($0))" } ?? "frame.sequence")
                    self.emit("object", {"label": "person", "confidence": 0.9,
                                         "bounds": {"x": x, "y": 100, "width": 30, "height": 60}})
                    if frame.sequence == 3:
                        self.emit("object", {"label": "person", "confidence": 0.9, "track_id": 77,
                                             "bounds": {"x": 300, "y": 0, "width": 10, "height": 10}})
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func run(_ extra: [String], frames: Int = 26) throws -> CommandResult {
        try CVHostBinary.run(["run", "--plugin", try walker(), "--input", "testsrc:320x240@10:unpaced", "--max-frames", "\(frames)",
                              "--metrics-interval", "0"] + extra, environment: python)
    }

    @Test("--events: stdout gets the results and the analytics' events, and the run's totals (analytics.summary) at the end; nothing else")
    func eventsOnly() throws {
        let r = try Self.run(["--track", "walker", "--line", "door=160,0 160,240:in=left", "--zone", "right=170,0 320,0 320,240 170,240", "--events"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        let kinds = Set(r.lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["event"] as? String })
        #expect(kinds == ["result", "track.started", "track.ended", "line.crossed", "zone.entered", "zone.exited", "zone.occupancy", "analytics.summary"],
                "\(kinds)")
        let summary = try #require(r.events("analytics.summary").first?["data"] as? [String: Any])
        let line = try #require((summary["lines"] as? [[String: Any]])?.first)
        let zone = try #require((summary["zones"] as? [[String: Any]])?.first)
        #expect(summary["tracks_started"] as? Int == 1 && line["total_in"] as? Int == 1 && (line["in"] as? [String: Int]) == ["person": 1], "\(summary)")
        #expect(zone["total_entries"] as? Int == 1 && zone["exits"] as? Int == 1 && zone["peak_occupancy"] as? Int == 1, "\(summary)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        // One choice of what stdout gets.
        let both = try Self.run(["--track", "walker", "--events", "--results-only"])
        #expect(both.exitCode == 64 && both.stderr.contains("--results-only, --events and --field each choose what stdout gets: give one of them"))
    }

    @Test("a box that walks across a line into a zone: track.started after 3 frames, track_id in its results, line.crossed in, zone entered and exited at the end, track.ended")
    func walkAcross() throws {
        let r = try Self.run(["--track", "walker", "--line", "door=160,0 160,240:in=left", "--zone", "right=170,0 320,0 320,240 170,240"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        let results = r.events("result")
        // Reported from its third frame on; the result with its own track_id is left as it is (and not followed).
        let ids = results.map { ($0["seq"] as? Int ?? -1, ($0["data"] as? [String: Any])?["track_id"] as? Int) }
        #expect(ids.filter { $0.0 < 2 }.allSatisfy { $0.1 == nil } && ids.filter { $0.0 >= 2 }.allSatisfy { $0.1 == 1 || $0.1 == 77 }, "\(ids)")
        #expect(ids.filter { $0.1 == 77 }.count == 1)
        let started = r.events("track.started")
        #expect(started.count == 1 && started.first?["seq"] as? Int == 2 && started.first?["plugin"] as? String == "walker", "\(started)")
        let crossed = r.events("line.crossed").compactMap { $0["data"] as? [String: Any] }
        #expect(crossed.count == 1 && crossed.first?["direction"] as? String == "in" && crossed.first?["in"] as? Int == 1
                && crossed.first?["label"] as? String == "person", "\(crossed)")
        #expect(r.events("zone.entered").count == 1)
        let exited = r.events("zone.exited").compactMap { $0["data"] as? [String: Any] }
        // Still inside when the input ended: last seen there.
        #expect(exited.count == 1 && exited.first?["reason"] as? String == "input_ended", "\(exited)")
        let ended = r.events("track.ended").compactMap { $0["data"] as? [String: Any] }
        #expect(ended.count == 1 && ended.first?["reason"] as? String == "input_ended" && ended.first?["frames"] as? Int == 26, "\(ended)")
        // The events of the end come before the plugin's final metrics.
        let kinds = r.events.compactMap { $0["event"] as? String }
        #expect(kinds.firstIndex(of: "track.ended")! < kinds.lastIndex(of: "metrics")!, "\(kinds)")
    }

    @Test("a detector at 5 or 3.4 of 10 frames a second: zones and lines see the tracks in the frames it passes over too (placed between the frames around), so the crossing and the entry come at the frames they come at when it takes every frame")
    func passedOverFrames() throws {
        // 4 pixels a frame: slow enough to be followed at every third frame.
        let slow = try Self.walker(step: 4)
        func run(_ cap: String) throws -> (crossed: [Int], entered: [Int], results: Int, events: [[String: Any]]) {
            let r = try CVHostBinary.run(["run", "--plugin", slow + cap, "--input", "testsrc:320x240@10:unpaced", "--max-frames", "70",
                                          "--metrics-interval", "0", "--track", "walker", "--line", "door=160,0 160,240:in=left",
                                          "--zone", "right=170,0 320,0 320,240 170,240"], environment: Self.python)
            #expect(r.exitCode == 0, "\(r.stderr)")
            #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
            let seqs = { (kind: String) in r.events(kind).compactMap { $0["seq"] as? Int } }
            return (seqs("line.crossed"), seqs("zone.entered"), r.events("result").count,
                    r.events.filter { ["line.crossed", "zone.entered"].contains($0["event"] as? String ?? "") })
        }
        let every = try run("")
        // (Frame 3's result with a track_id of its own counts where frame 3 is processed.)
        #expect(every.crossed.count == 1 && every.entered.count == 1 && every.results == 71, "\(every)")
        for (cap, results) in [(":max_fps=5", 35), (":max_fps=3.4", 25)] {
            let capped = try run(cap)
            #expect(capped.results == results, "\(cap): \(capped.results) results")
            #expect(capped.crossed == every.crossed && capped.entered == every.entered,
                    "\(cap): crossed at \(capped.crossed), entered at \(capped.entered); every frame: \(every.crossed), \(every.entered)")
            // Each event is stamped with its own frame: its pts is its seq's (10 frames a second).
            for e in capped.events {
                #expect(abs((e["pts"] as? Double ?? -1) - Double(e["seq"] as? Int ?? 0) / 10) < 1e-6, "\(e)")
            }
        }
    }

    @Test("a plugin whose boxes all fall under the tracker's high (0.3 of 0.4) is said once, with the fix: its best score and a high that lets its boxes start tracks")
    func boxesUnderHigh() throws {
        let plugin = Self.folder + "/faint.py"
        try """
            import cvhost

            class Faint(cvhost.Plugin):
                api_version = (1, 0)
                name = "faint"
                pixel_formats = ("gray8",)

                def process(self, frame):
                    self.emit("object", {"label": "person", "confidence": 0.3, "bounds": {"x": 10 + frame.sequence, "y": 10, "width": 30, "height": 60}})
            """.write(toFile: plugin, atomically: true, encoding: .utf8)
        let r = try CVHostBinary.run(["run", "--plugin", plugin, "--input", "testsrc:160x120@10:unpaced", "--max-frames", "40", "--metrics-interval", "0",
                                      "--track", "faint"], timeout: 90, environment: Self.python)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let said = r.stderr.components(separatedBy: "boxes and no track").count - 1
        #expect(said == 1, "\(r.stderr)")
        #expect(r.stderr.contains("the best score so far is 0.3, under high=0.4") && r.stderr.contains("--track faint:high=0.27"), "\(r.stderr)")
        // With that high, the same boxes are one track, and nothing is said.
        let fixed = try CVHostBinary.run(["run", "--plugin", plugin, "--input", "testsrc:160x120@10:unpaced", "--max-frames", "40", "--metrics-interval", "0",
                                          "--track", "faint:high=0.27"], timeout: 90, environment: Self.python)
        #expect(fixed.exitCode == 0 && !fixed.stderr.contains("boxes and no track"), "\(fixed.stderr)")
        #expect(fixed.events("track.started").count == 1)
    }

    @Test("a tracked plugin too slow for its live input (0.25 s a frame, 10 a second asked) is said once: what it processed, what was asked, and a max_fps it keeps up with")
    func pluginBehind() throws {
        let plugin = Self.folder + "/slow.py"
        try """
            import time
            import cvhost

            class Slow(cvhost.Plugin):
                api_version = (1, 0)
                name = "slow"
                pixel_formats = ("gray8",)

                def process(self, frame):
                    time.sleep(0.25)
                    self.emit("object", {"label": "person", "confidence": 0.9, "bounds": {"x": 10, "y": 10, "width": 30, "height": 60}})
            """.write(toFile: plugin, atomically: true, encoding: .utf8)
        let said = "--track slow: the plugin processed "
        let r = try CVHostBinary.run(["run", "--plugin", plugin + ":max_fps=10", "--input", "testsrc:160x120@20", "--metrics-interval", "0",
                                      "--track", "slow", "-q"], timeout: 120, environment: Self.python, withStdin: false) { run in
            run.waitForStderr(said, timeout: 90)
            usleep(2_000_000)
            kill(run.pid, SIGTERM)
        }
        #expect(r.stderr.components(separatedBy: said).count - 1 == 1, "\(r.stderr)")
        #expect(r.stderr.contains("were asked of it") && r.stderr.contains("on --plugin slow)"), "\(r.stderr)")
    }

    @Test("/metrics counts tracks, crossings by line, label and direction, and zones' occupancy and entries (promtool checks it)")
    func metrics() throws {
        let port = freeLoopbackPort()
        var scraped = ""
        let r = try CVHostBinary.run(["run", "--plugin", try Self.walker(), "--input", "testsrc:320x240@10:unpaced", "--max-frames", "20",
                                      "--metrics-interval", "0", "--track", "walker", "--line", "door=160,0 160,240",
                                      "--zone", "right=170,0 320,0 320,240 170,240", "--http", "127.0.0.1:\(port)"],
                                     timeout: 90, environment: Self.python, withStdin: false) { run in
            guard run.wait(until: { $0.contains("\"event\":\"session.stopped\"") }) else { return }
            scraped = (try? LiveViewTests.http(port, "/metrics").body) ?? ""
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        let file = Self.folder + "/metrics.txt"
        try scraped.write(toFile: file, atomically: true, encoding: .utf8)
        let promtool = try Tool.run("/bin/sh", ["-c", "promtool check metrics < '\(file)'"])
        #expect(promtool.status == 0, "promtool: \(promtool.output)")
        let l = ["plugin": "walker", "source": "testsrc:320x240@10:unpaced"]
        #expect(LiveViewTests.sample(scraped, "cvhost_tracks_started_total", l) == 1, "\(scraped)")
        #expect(LiveViewTests.sample(scraped, "cvhost_line_crossings_total", l.merging(["line": "door", "label": "person", "direction": "in"]) { $1 }) == 1)
        #expect(LiveViewTests.sample(scraped, "cvhost_line_crossings_total", l.merging(["line": "door", "label": "person", "direction": "out"]) { $1 }) == 0)
        // The input ended: its track ended, the zone is empty again, and it was entered once.
        // Inside when the input ended: the occupancy stays as last seen.
        #expect(LiveViewTests.sample(scraped, "cvhost_zone_occupancy", l.merging(["zone": "right", "label": "person"]) { $1 }) == 1)
        #expect(LiveViewTests.sample(scraped, "cvhost_zone_entries_total", l.merging(["zone": "right", "label": "person"]) { $1 }) == 1)
        #expect(LiveViewTests.sample(scraped, "cvhost_tracks_active", l) == 0)
    }

    @Test("the live view after the input ended: a zone still shows the tracks last seen inside it (the input's end is no one leaving)")
    func liveViewAfterTheEnd() throws {
        let port = freeLoopbackPort()
        var dom = ""
        let page = "http://127.0.0.1:\(port)/"
        let r = try CVHostBinary.run(["run", "--plugin", try Self.walker(), "--input", "testsrc:320x240@10:unpaced", "--max-frames", "26",
                                      "--metrics-interval", "0", "--track", "walker", "--zone", "right=170,0 90000,0 90000,240 170,240",
                                      "--http", "127.0.0.1:\(port)"], timeout: 120, environment: Self.python, withStdin: false) { run in
            guard run.wait(until: { $0.contains("\"event\":\"session.stopped\"") }) else { return }
            let chromium = ["40", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,800", "--timeout=10000", "--dump-dom", page]
            // The page replays /events as it loads: on a loaded machine, not always within one try.
            for _ in 0..<5 where !dom.contains("right: ") { dom = (try? Tool.run("timeout", chromium).output) ?? "" }
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(r.events("zone.exited").first.flatMap { ($0["data"] as? [String: Any])?["reason"] as? String } == "input_ended")
        #expect(dom.contains("right: 1 inside"), "\(dom.suffix(1500))")
    }

    @Test("the live view draws the lines over the picture (a screenshot) and lists what zones and lines count; boxes carry their track id")
    func liveView() throws {
        let port = freeLoopbackPort()
        var dom = "", drawn = 0
        let page = "http://127.0.0.1:\(port)/", shot = Self.folder + "/view.png"
        // A live input (10 frames a second), looked at while it runs: the box crosses the line at its
        // 15th frame and stays in the zone (which goes on past the picture, as the box does).
        let r = try CVHostBinary.run(["run", "--plugin", try Self.walker(), "--input", "testsrc:320x240@10", "--max-frames", "600",
                                      "--metrics-interval", "0", "--track", "walker", "--line", "door=160,0 160,240",
                                      "--zone", "right=170,0 90000,0 90000,240 170,240", "--http", "127.0.0.1:\(port)"],
                                     timeout: 180, environment: Self.python, withStdin: false) { run in
            guard run.wait(until: { $0.contains("\"event\":\"zone.entered\"") }) else { return }
            let chromium = ["40", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,800"]
            // The picture with the line drawn over it (orange, #ff9100), a few tries: a browser renders when it renders.
            for _ in 0..<5 where drawn < 200 {
                _ = try? Tool.run("timeout", chromium + ["--timeout=5000", "--screenshot=\(shot)", page])
                drawn = (try? Screenshot(shot, width: 1280, height: 800)).map { s in
                    (0..<s.height).reduce(0) { n, y in n + (0..<s.width).filter { x in let (r, g, b) = s.pixel(x, y); return r > 230 && g > 120 && g < 170 && b < 60 }.count }
                } ?? 0
            }
            // The page replays /events as it loads: on a loaded machine, not always within one try.
            for _ in 0..<5 where !dom.contains("door: in 1") { dom = (try? Tool.run("timeout", chromium + ["--timeout=10000", "--dump-dom", page]).output) ?? "" }
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(drawn >= 200, "\(drawn) pixels of the line's colour")
        #expect(dom.contains("door: in 1 · out 0") && dom.contains("right: 1 inside"), "\(dom.suffix(1500))")
        #expect(dom.contains("person #1 90%"), "\(dom.suffix(1500))")
    }

    @Test("speed through a measured zone, through the binary: the walker's 100 px/s over a zone of 10 px a metre is 36 km/h on zone.exited and on the line it crosses there; valid by the schema")
    func speedThroughAZone() throws {
        let r = try Self.run(["--track", "walker", "--zone", "road=100,0 200,0 200,240 100,240:distances=10,24,10,24",
                              "--line", "half=150,0 150,240"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        let exited = try #require(r.events("zone.exited").first?["data"] as? [String: Any], "\(r.stdout.suffix(2000))")
        #expect(exited["reason"] as? String == "left" && exited["speed_unit"] as? String == "km/h", "\(exited)")
        #expect(abs((exited["speed"] as? Double ?? 0) - 36) <= 1.8, "\(exited)")
        let crossed = try #require(r.events("line.crossed").first?["data"] as? [String: Any])
        #expect(abs((crossed["speed"] as? Double ?? 0) - 36) <= 3.6 && crossed["speed_zone"] as? String == "road", "\(crossed)")
        let zone = ((r.events("session.started").first?["plugins"] as? [[String: Any]])?.first?["analytics"] as? [String: Any])?["zones"] as? [[String: Any]]
        #expect(zone?.first?["distances"] as? [Double] == [10, 24, 10, 24] && zone?.first?["speed_unit"] as? String == "km/h", "\(zone ?? [])")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        let refused = try Self.run(["--track", "walker", "--zone", "road=100,0 200,0 200,240 100,240:distances=10,24"])
        #expect(refused.exitCode == 64 && refused.stderr.contains("distances are the real lengths of its four sides"), "\(refused.stderr)")
    }

    @Test("the live view draws the labels of two detections of one object (a car and a truck, one box) apart, each readable")
    func overlappingLabels() throws {
        let plugin = Self.folder + "/pair.py"
        try """
            import cvhost

            class Pair(cvhost.Plugin):
                api_version = (1, 0)
                name = "pair"
                pixel_formats = ("gray8",)

                def process(self, frame):
                    for label, score in (("car", 0.9), ("truck", 0.6)):
                        self.emit("object", {"label": label, "confidence": score, "bounds": {"x": 100, "y": 120, "width": 80, "height": 40}})
            """.write(toFile: plugin, atomically: true, encoding: .utf8)
        let port = freeLoopbackPort()
        var labels: [[Any]] = []
        let r = try CVHostBinary.run(["run", "--plugin", plugin, "--input", "testsrc:320x240@10", "--max-frames", "600", "--metrics-interval", "0",
                                      "--http", "127.0.0.1:\(port)"], timeout: 120, environment: Self.python, withStdin: false) { run in
            guard run.wait(until: { $0.contains("\"event\":\"result\"") }) else { return }
            // The overlay's texts once both are drawn: [["car 90%", y], ["truck 60%", y]].
            let texts = "(() => { const t = [...document.querySelectorAll('#overlay text')].map(e => [e.textContent, Number(e.getAttribute('y'))]); "
                + "return t.length >= 2 ? t : null })()"
            labels = PageProbe.value("http://127.0.0.1:\(port)/", texts, as: [[Any]].self) ?? []
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        let y = Dictionary(labels.compactMap { t in (t.first as? String).flatMap { k in (t.last as? Double).map { (k, $0) } } }, uniquingKeysWith: { a, _ in a })
        let car = try #require(y["car 90%"], "\(labels)"), truck = try #require(y["truck 60%"], "\(labels)")
        // Apart by at least a line of text (the overlay's font is at least 12 px), where both were at 108.
        #expect(abs(car - truck) >= 12, "car at y \(car), truck at y \(truck)")
    }

    /// The track ids each person of the face clip's truth was given: frame by frame, the tracked box
    /// that overlaps them most (IoU >= 0.3); and how many person-frames were tracked.
    static func trackIDs(of r: CommandResult) throws -> (idsOf: [String: Set<Int>], seen: Int) {
        let truth = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Corpus.path("video/faces_1280x720_gt.json"))))
        let frames = try #require((truth as? [String: Any])?["per_frame"] as? [[String: Any]])
        func iou(_ a: [Double], _ b: [Double]) -> Double {
            let w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]), h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
            return w > 0 && h > 0 ? w * h / (a[2] * a[3] + b[2] * b[3] - w * h) : 0
        }
        var tracked: [Int: [(box: [Double], id: Int)]] = [:]
        for line in r.events("result") {
            guard let d = line["data"] as? [String: Any], let id = d["track_id"] as? Int, let b = d["bounds"] as? [String: Double],
                  let seq = line["seq"] as? Int else { continue }
            tracked[seq, default: []].append(([b["x"]!, b["y"]!, b["width"]!, b["height"]!], id))
        }
        var idsOf: [String: Set<Int>] = [:], seen = 0
        for f in frames {
            guard let n = f["frame"] as? Int, let faces = f["faces"] as? [[String: Any]] else { continue }
            for face in faces {
                guard let who = face["source"] as? String, let box = face["box"] as? [Double],
                      let best = tracked[n]?.max(by: { iou($0.box, box) < iou($1.box, box) }), iou(best.box, box) >= 0.3 else { continue }
                idsOf[who, default: []].insert(best.id)
                seen += 1
            }
        }
        return (idsOf, seen)
    }

    @Test("NudeNet's detector on the face clip: its label flips between FACE_FEMALE and FACE_MALE on one face, which is still one track (the label voted); by_label=true splits it in two")
    func labelFlipsOfARealDetector() throws {
        try #require(Corpus.isPresent, "../shared/corpus is missing")
        let detect = "detect:model=\(DetectPluginTests.realModel),classes=face_female+face_male,agnostic=true"
        func run(_ track: String) throws -> CommandResult {
            try CVHostBinary.run(["run", "--plugin", detect, "--input", Corpus.path("video/faces_1280x720.mp4"), "--track", track,
                                  "--metrics-interval", "0"], timeout: 300, environment: DetectPluginTests.python)
        }
        let r = try run("detect")
        #expect(r.exitCode == 0, "\(r.stderr)")
        let (ids, _) = try Self.trackIDs(of: r)
        // The face NudeNet finds at 320 (the astronaut's): one track, whose boxes had both labels.
        #expect(!ids.isEmpty && ids.values.allSatisfy { $0.count == 1 }, "\(ids)")
        let ended = r.events("track.ended").compactMap { $0["data"] as? [String: Any] }
        #expect(ended.contains { ($0["labels"] as? [String: Int]).map { $0.keys.sorted() == ["FACE_FEMALE", "FACE_MALE"] } == true }, "\(ended)")
        let split = try run("detect:by_label=true")
        let (splitIDs, _) = try Self.trackIDs(of: split)
        #expect(splitIDs.values.contains { $0.count >= 2 }, "\(splitIDs)")
    }

    @Test("the corpus's face clip (six people moving and zooming) tracked from the face plugin's boxes: six tracks, each person one id throughout; each track's snapshot at its end is its best frame (score x area, sharp), cropped around its box")
    func faceClip() throws {
        try #require(Corpus.isPresent, "../shared/corpus is missing")
        let snapshots = Self.folder + "/face-snapshots"
        let r = try CVHostBinary.run(["run", "--plugin", "face", "--input", Corpus.path("video/faces_1280x720.mp4"), "--track", "face",
                                      "--metrics-interval", "0", "--snapshots", snapshots + ":on=track.ended,crop=true"], timeout: 300)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let (idsOf, seen) = try Self.trackIDs(of: r)
        #expect(idsOf.count == 6 && idsOf.values.allSatisfy { $0.count == 1 }, "\(idsOf)")
        #expect(Set(idsOf.values.flatMap { $0 }).count == 6, "an id shared: \(idsOf)")
        // Tracked from their third frame on (min_hits), in every frame after.
        #expect(seen >= 6 * 88, "\(seen) of \(6 * 90) person-frames tracked")
        #expect(r.events("track.started").count == 6, "\(r.events("track.started").count) tracks")
        // Each track's best frame: among its own frames' best by score x area (a sharper one may win
        // over a slightly larger box), its crop holding the box at that frame with a quarter around it.
        var boxes: [Int: [Int: (score: Double, box: [String: Double])]] = [:]
        for line in r.events("result") {
            guard let d = line["data"] as? [String: Any], let id = d["track_id"] as? Int, let seq = line["seq"] as? Int,
                  let b = d["bounds"] as? [String: Double], let c = d["confidence"] as? Double else { continue }
            boxes[id, default: [:]][seq] = (c * b["width"]! * b["height"]!, b)
        }
        let ended = r.events("track.ended")
        #expect(ended.count == 6)
        for line in ended {
            let id = try #require((line["data"] as? [String: Any])?["track_id"] as? Int)
            let path = try #require(line["snapshot"] as? String, "track \(id)")
            let name = URL(fileURLWithPath: path).lastPathComponent
            let seq = try #require(Int(name.split(separator: "-").dropLast(4).last ?? ""), "\(name)")
            let frames = try #require(boxes[id]), best = try #require(frames.values.map(\.score).max())
            let chosen = try #require(frames[seq], "track \(id): frame \(seq) has no box of it")
            #expect(chosen.score >= 0.8 * best, "track \(id): frame \(seq) scores \(chosen.score), its best \(best)")
            let size = try Tool.run("ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", path]).output
                .trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Double($0) }
            #expect(size.count == 2 && size[0] >= chosen.box["width"]! && size[1] >= chosen.box["height"]!, "\(name): \(size) for \(chosen.box)")
        }
    }

    @Test("zones and lines from a config file; a zone that cannot be is refused naming the file and line (exit 64)")
    func configFile() throws {
        let good = Self.folder + "/good.yaml"
        try """
            plugin: [\(try Self.walker())]
            input: testsrc:320x240@10:unpaced
            max-frames: 26
            metrics-interval: 0
            track: [walker]
            line:
              - "door=0.5,0 0.5,1"
            """.write(toFile: good, atomically: true, encoding: .utf8)
        let r = try CVHostBinary.run(["run", "--config", good], environment: Self.python)
        #expect(r.exitCode == 0 && r.events("line.crossed").count == 1, "\(r.stderr)")
        let bad = Self.folder + "/bad.yaml"
        try """
            plugin: [\(try Self.walker())]
            input: testsrc
            track: [walker]
            zone:
              - "ok=0,0 10,0 10,10"
              - "bowtie=0,0 100,100 100,0 0,100"
            """.write(toFile: bad, atomically: true, encoding: .utf8)
        let refused = try CVHostBinary.run(["run", "--config", bad], environment: Self.python)
        #expect(refused.exitCode == 64 && refused.stderr.contains("bad.yaml:6: zone") && refused.stderr.contains("edges cross"), "\(refused.stderr)")
        #expect(refused.stdout.isEmpty)
    }

    @Test("refusals, one line each, exit 64: zones without --track, an unknown plugin or input, too few points, a zero-length line, a fraction outside 0..1, an unknown option")
    func refusals() throws {
        for (args, said) in [
            (["--zone", "a=0,0 10,0 10,10"], "add --track PLUGIN"),
            (["--track", "nosuch"], "no --plugin is called nosuch"),
            (["--track", "walker", "--zone", "a=0,0 10,0 10,10:input=elsewhere"], "no input called elsewhere"),
            (["--track", "walker", "--zone", "a=0,0 10,0"], "at least 3 points"),
            (["--track", "walker", "--zone", "a=0,0 10,0 20,0"], "no area"),
            (["--track", "walker", "--line", "l=5,5 5,5"], "the same"),
            (["--track", "walker", "--line", "l=0,0 1.5,1:units=fractions"], "0..1"),
            (["--track", "walker", "--line", "l=0,0 10,10:colour=red"], "no option 'colour'"),
            (["--track", "walker:lost=-1"], "lost is a number"),
            (["--track", "walker", "--zone", "a=0,0 10,0 10,10", "--zone", "a=0,0 20,0 20,20"], "given twice"),
        ] {
            let r = try Self.run(args, frames: 1)
            #expect(r.exitCode == 64 && r.stderr.contains(said), "\(args): \(r.stderr)")
            #expect(r.stdout.isEmpty || !r.stdout.contains("\"event\":\"result\""), "\(args)")
        }
    }
}

extension AnalyticsTests {
    @Test("a tracked plugin whose frames come further apart than the tracker's lost (max_fps=0.4: 2.5 s) is said once, with the fix; with lost=4, nothing is said")
    func framesFartherThanLost() throws {
        let slow = try Self.walker(step: 1)
        let said = "s passed between two frames the plugin processed, more than the tracker keeps a track unseen (lost=1.5)"
        let r = try CVHostBinary.run(["run", "--plugin", slow + ":max_fps=0.4", "--input", "testsrc:320x240@10:unpaced", "--max-frames", "120",
                                      "--metrics-interval", "0", "--track", "walker"], environment: Self.python)
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(r.stderr.components(separatedBy: said).count == 2 && r.stderr.contains("--track walker:lost=3.8"), "\(r.stderr)")
        let kept = try CVHostBinary.run(["run", "--plugin", slow + ":max_fps=0.4", "--input", "testsrc:320x240@10:unpaced", "--max-frames", "120",
                                         "--metrics-interval", "0", "--track", "walker:lost=4"], environment: Self.python)
        #expect(kept.exitCode == 0 && !kept.stderr.contains("passed between two frames"), "\(kept.stderr)")
    }
}
