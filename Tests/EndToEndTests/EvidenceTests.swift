import CVHostTestSupport
import Foundation
import Testing

/// Snapshots and clips of what cvhost saw (--snapshots, --clips), through the binary: a file of
/// 10 s (H.264, a keyframe a second) and a plugin that reports a box at frames 150, 170 and 270.
@Suite("Evidence: snapshots and clips")
struct EvidenceTests {
    static let folder = TestFolders.make("evidence-e2e")
    static let python = ["CVHOST_PYTHON": "/usr/bin/python3"]

    static func clip() throws -> String {
        try MediaFixtures.make("evidence.mp4", ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-t", "10", "-c:v", "libx264",
                                                "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p"])
    }

    /// A plugin that reports a box at each of `frames`.
    static func plugin(frames: [Int] = [150, 170, 270]) throws -> String {
        let path = folder + "/marks\(frames.map(String.init).joined(separator: "_")).py"
        try """
            import cvhost

            class Marks(cvhost.Plugin):
                api_version = (1, 0)
                name = "marks"
                pixel_formats = ("gray8",)

                def process(self, frame):
                    if frame.sequence in (\(frames.map(String.init).joined(separator: ", ")),):
                        self.emit("object", {"label": "thing", "confidence": 0.9, "bounds": {"x": 100, "y": 100, "width": 80, "height": 60}})
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The MD5 of each video packet of `file` with its pts (ffprobe), in order.
    static func packets(_ file: String) throws -> [(pts: Double, hash: String)] {
        let out = try Tool.run("ffprobe", ["-v", "error", "-select_streams", "v", "-show_packets", "-show_data_hash", "MD5",
                                            "-show_entries", "packet=pts_time,data_hash", "-of", "csv=p=0", file]).output
        return out.split(separator: "\n").compactMap { line in
            let f = line.split(separator: ",")
            guard f.count == 2, let pts = Double(f[0]) else { return nil }
            return (pts, String(f[1]))
        }
    }

    @Test("a clip around events from a file: from the keyframe at or before event - pre to last event + post, its packets the file's own (MD5 each); overlapping events share one clip; the event's snapshot is its box with a margin; valid by the schema")
    func clipsAndSnapshots() throws {
        let source = try Self.clip()
        let clips = Self.folder + "/clips", snaps = Self.folder + "/snaps"
        let r = try CVHostBinary.run(["run", "--plugin", try Self.plugin(), "--input", source, "--metrics-interval", "0",
                                      "--clips", clips + ":on=result,pre=1,post=1", "--snapshots", snaps + ":on=result,crop=true"],
                                     timeout: 120, environment: Self.python)
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        let results = r.events("result")
        #expect(results.count == 3)
        let saved = r.events("clip.saved").compactMap { $0["data"] as? [String: Any] }
        #expect(saved.count == 2, "\(saved)")
        // The first covers frames 150 (5.0 s) and 170 (5.667 s): one clip from the keyframe at 4 s to 6.667 s or after.
        let ids = results.compactMap { $0["event_id"] as? String }
        #expect(saved.first?["events"] as? [String] == Array(ids.prefix(2)), "\(saved)")
        #expect(saved.last?["events"] as? [String] == [ids[2]])
        let first = try #require(saved.first)
        let start = try #require(first["start_pts"] as? Double), end = try #require(first["end_pts"] as? Double)
        #expect(start <= 4.0 + 1e-6 && start > 2.9 && end + 1.0 / 30 >= 6.667 - 1e-3 && end < 7.5, "\(first)")
        // Its packets are the file's own from start to end, byte for byte; the first a keyframe; the index first.
        let path = try #require(first["path"] as? String)
        let clipPackets = try Self.packets(path), sourcePackets = try Self.packets(source)
        let expected = sourcePackets.filter { $0.pts >= start - 1e-6 && $0.pts <= end + 1e-6 }.map(\.hash)
        #expect(clipPackets.map(\.hash) == expected && !expected.isEmpty, "\(clipPackets.count) packets, \(expected.count) expected")
        let flags = try Tool.run("ffprobe", ["-v", "error", "-select_streams", "v", "-show_packets", "-show_entries", "packet=flags",
                                             "-of", "csv=p=0", path]).output
        #expect(flags.hasPrefix("K"))
        let head = try FileHandle(forReadingFrom: URL(fileURLWithPath: path)).readData(ofLength: 4096)
        #expect(head.range(of: Data("moov".utf8)) != nil, "the index is not at the front")
        #expect(first["bytes"] as? Int == (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int))
        // The second ends with the file (its post cut short by the end).
        #expect((saved.last?["end_pts"] as? Double ?? 0) > 9.9)
        // Each result's snapshot: its box (80x60) with a quarter of it around: 120x90.
        for line in results {
            let snapshot = try #require(line["snapshot"] as? String)
            let size = try Tool.run("ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", snapshot]).output
            #expect(size.trimmingCharacters(in: .whitespacesAndNewlines) == "120,90", "\(snapshot): \(size)")
        }
    }

    @Test("draw=true: the snapshot has the frame's box drawn (yellow) with its label written above it (white on a dark box), by FFmpeg's drawbox and drawtext; a label of filter syntax is drawn as it is")
    func drawnBoxes() throws {
        let snaps = Self.folder + "/drawn"
        let plugin = Self.folder + "/labelled.py"
        try """
            import cvhost

            class Labelled(cvhost.Plugin):
                api_version = (1, 0)
                name = "labelled"
                pixel_formats = ("gray8",)

                def process(self, frame):
                    if frame.sequence == 30:
                        self.emit("object", {"label": "thing:%{pts}',[x]", "confidence": 0.9, "bounds": {"x": 100, "y": 100, "width": 160, "height": 120}})
            """.write(toFile: plugin, atomically: true, encoding: .utf8)
        let r = try CVHostBinary.run(["run", "--plugin", plugin, "--input", try Self.clip(), "--max-frames", "40", "--metrics-interval", "0",
                                      "--snapshots", snaps + ":on=result,draw=true"], timeout: 120, environment: Self.python)
        #expect(r.exitCode == 0 && !r.stderr.contains("not drawn"), "\(r.stderr)")
        let path = try #require(r.events("result").first?["snapshot"] as? String)
        let raw = Self.folder + "/drawn.rgb"
        try Tool.check("ffmpeg", ["-v", "error", "-y", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", raw])
        let rgb = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
        #expect(rgb.count == 640 * 360 * 3)
        func pixel(_ x: Int, _ y: Int) -> (Int, Int, Int) { let i = (y * 640 + x) * 3; return (Int(rgb[i]), Int(rgb[i + 1]), Int(rgb[i + 2])) }
        // The box's edges: yellow.
        let edge = (100..<260).map { pixel($0, 101) } + (100..<220).map { pixel(101, $0) }
        let yellow = edge.filter { $0.0 > 180 && $0.1 > 180 && $0.2 < 100 }.count
        #expect(yellow * 10 >= edge.count * 8, "\(yellow) of \(edge.count) edge pixels yellow")
        // The label above it: white letters (the picture there is red and green columns, nothing white).
        let label = (100..<240).flatMap { x in (70..<98).map { pixel(x, $0) } }
        #expect(label.filter { $0.0 > 190 && $0.1 > 190 && $0.2 > 190 }.count > 40)
    }

    @Test("the live view serves them: GET /clips and /snapshots list them (newest first; ?source=, ?event=), a clip in ranges (206, Content-Range; 416 past its end), a name not kept is 404; the page lists them (thumbnails, links); headless Chromium plays a clip (readyState 4, its duration) and seeks in it")
    func served() throws {
        let source = try Self.clip()
        let clips = Self.folder + "/served-clips", snaps = Self.folder + "/served-snaps"
        let port = freeLoopbackPort()
        var list = "", snapList = "", range = (status: 0, body: ""), past = 0, missing = 0, other = "", played: [Double] = [], page: [Int] = [], metrics = ""
        let r = try CVHostBinary.run(["run", "--plugin", try Self.plugin(), "--input", "cam=" + source, "--metrics-interval", "0",
                                      "--clips", clips + ":on=result,pre=1,post=1", "--snapshots", snaps + ":on=result",
                                      "--http", "127.0.0.1:\(port)", "--http-linger", "120"],
                                     timeout: 180, environment: Self.python, withStdin: false) { run in
            guard run.wait(until: { $0.contains("\"event\":\"session.stopped\"") }) else { return }
            list = (try? LiveViewTests.http(port, "/clips"))?.body ?? ""
            snapList = (try? LiveViewTests.http(port, "/snapshots?source=cam&event=result&label=thing&limit=2"))?.body ?? ""
            other = (try? LiveViewTests.http(port, "/clips?source=elsewhere"))?.body ?? ""
            let clipsListed = (try? JSONSerialization.jsonObject(with: Data(list.utf8)) as? [String: Any])?["clips"] as? [[String: Any]] ?? []
            if let url = clipsListed.last?["url"] as? String {
                range = (try? LiveViewTests.http(port, url, headers: ["Range: bytes=0-99"])) ?? (0, "")
                past = (try? LiveViewTests.http(port, url, headers: ["Range: bytes=999999999-"]))?.status ?? 0
                // In the browser: the clip loaded, then a seek to 1.5 s, answered from a range.
                let probe = "(() => { const v = document.querySelector('video'); if (!v || v.readyState < 4) return null; "
                    + "if (!window.seekAsked) { window.seekAsked = true; v.pause(); v.currentTime = 1.5; return null } "
                    + "return v.seeking || v.readyState < 2 ? null : [v.duration, v.currentTime] })()"
                played = PageProbe.value("http://127.0.0.1:\(port)\(url)", probe, as: [Double].self) ?? []
            }
            missing = (try? LiveViewTests.http(port, "/clips/nothing.mp4"))?.status ?? 0
            metrics = (try? LiveViewTests.http(port, "/metrics"))?.body ?? ""
            // The page lists the events' snapshots (thumbnails, loaded) and the clips (links).
            let listedOnPage = "(() => { const t = [...document.querySelectorAll('#evidence img.thumb')].filter(i => i.complete && i.naturalWidth > 0).length, "
                + "c = document.querySelectorAll('#evidence a[href^=\"clips/\"]').length; return t >= 3 && c >= 2 ? [t, c] : null })()"
            page = PageProbe.value("http://127.0.0.1:\(port)/", listedOnPage, as: [Int].self) ?? []
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        let saved = r.events("clip.saved").compactMap { $0["data"] as? [String: Any] }
        let listed = (try JSONSerialization.jsonObject(with: Data(list.utf8)) as? [String: Any])?["clips"] as? [[String: Any]] ?? []
        // Newest first: the clips of the run in the reverse of their clip.saved lines.
        #expect(listed.compactMap { $0["file"] as? String } == saved.compactMap { $0["file"] as? String }.reversed(), "\(list)")
        #expect(listed.allSatisfy { $0["source"] as? String == "cam" && $0["event"] as? String == "result" }, "\(list)")
        let snaps2 = (try JSONSerialization.jsonObject(with: Data(snapList.utf8)) as? [String: Any])?["snapshots"] as? [[String: Any]] ?? []
        #expect(snaps2.count == 2, "\(snapList)")
        #expect(other.contains("\"clips\":[]"), "\(other)")
        #expect(range.status == 206, "\(range.status)")
        #expect(past == 416 && missing == 404)
        let first = try #require(saved.first)
        let seconds = try #require(first["seconds"] as? Double)
        #expect(page == [3, 2], "the page's list of snapshots and clips: \(page)")
        // The lines carry the files' addresses on the live view; /metrics counts what was kept.
        #expect(r.events("result").allSatisfy { ($0["snapshot_url"] as? String)?.hasPrefix("http://127.0.0.1:\(port)/snapshots/") == true })
        #expect(saved.allSatisfy { ($0["url"] as? String)?.hasPrefix("http://127.0.0.1:\(port)/clips/") == true })
        #expect(saved.allSatisfy { ($0["start_ts"] as? Double ?? 0) > 1.7e9 && ($0["start_ts"] as? Double ?? 0) <= ($0["end_ts"] as? Double ?? 0) }, "\(saved)")
        #expect(listed.allSatisfy { $0["label"] as? String == "thing" }, "\(list)")
        #expect(LiveViewTests.sample(metrics, "cvhost_clips_saved_total", [:]) == 2 && LiveViewTests.sample(metrics, "cvhost_snapshots_saved_total", [:]) == 3
                && LiveViewTests.sample(metrics, "cvhost_evidence_files_deleted_total", ["folder": "clips"]) == 0,
                "\(metrics.split(separator: "\n").filter { $0.contains("clip") || $0.contains("snapshot") })")
        #expect(played.count == 2 && abs(played[0] - (seconds + 1.0 / 30)) < 0.1 && abs(played[1] - 1.5) < 0.05, "played \(played), the clip \(seconds) s")
    }

    @Test("refusals: an unknown event (exit 64, with a guess), another user's folder (exit 5), one folder for snapshots and clips (exit 5); --clips on still images keeps none, said")
    func refusals() throws {
        let unknown = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "--clips", Self.folder + "/c:on=line.crosed"])
        #expect(unknown.exitCode == 64 && unknown.stderr.contains("did you mean line.crossed?"), "\(unknown.stderr)")
        let open = Self.folder + "/open"
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
        chmod(open, 0o777)
        let shared = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "--max-frames", "1", "--snapshots", open])
        #expect(shared.exitCode == 5 && shared.stderr.contains("can be written by every user"), "\(shared.stderr)")
        // One folder for both kinds: retention of one would delete the other's files.
        let both = Self.folder + "/both"
        let twice = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "--max-frames", "1", "--snapshots", both, "--clips", both])
        #expect(twice.exitCode == 5 && twice.stderr.contains("is in use (this run names it already): give each run, and each of --snapshots and --clips, a folder of its own"),
                "\(twice.stderr)")
        let images = Self.folder + "/images"
        try FileManager.default.createDirectory(atPath: images, withIntermediateDirectories: true)
        try Tool.check("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=64x48", "-frames:v", "1", images + "/a.png"])
        let still = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", images, "--clips", Self.folder + "/still"])
        #expect(still.exitCode == 0 && still.stderr.contains("is still images: no clips of it"), "\(still.stderr)")
    }

    /// 8 s at 30 fps, 320x240, whose frame N shows N in binary: 8 columns 40 pixels wide, white for a 1.
    static func numbered() throws -> String {
        try MediaFixtures.make("numbered.mp4", ["-f", "lavfi", "-i", "color=black:size=320x240:rate=30", "-t", "8",
                                                "-vf", "geq=lum='if(mod(floor(N/pow(2\\,floor(X/40)))\\,2)\\,235\\,16)':cb=128:cr=128",
                                                "-c:v", "libx264", "-preset", "ultrafast", "-crf", "4", "-pix_fmt", "yuv420p"])
    }

    /// The frame number each snapshot of `numbered()` shows, by its path (Debian's python3 and OpenCV).
    static func numbers(of snapshots: [String]) throws -> [String: Int] {
        let script = folder + "/frame_number.py"
        try """
            import sys, cv2
            for path in sys.argv[1:]:
                g = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
                print(path, sum(1 << i for i in range(8) if g[g.shape[0] // 2, 20 + 40 * i] > 128))
            """.write(toFile: script, atomically: true, encoding: .utf8)
        let out = try Tool.run("/usr/bin/python3", [script] + snapshots)
        #expect(out.status == 0, "\(out.output)")
        var numbers: [String: Int] = [:]
        for line in out.output.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let n = Int(parts[1]) { numbers[String(parts[0])] = n }
        }
        return numbers
    }

    @Test("results travel with their frame: with two instances shared, beside a faster plugin, every result's snapshot is of the frame it came from (the frame's number drawn in it)")
    func snapshotOfItsOwnFrame() throws {
        let snaps = Self.folder + "/own-frame"
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1,delay_ms=3,instances=2,share=true", "--plugin", "null:results=1",
                                      "--input", try Self.numbered(), "--max-frames", "90", "--metrics-interval", "0",
                                      "--snapshots", snaps + ":on=result"], timeout: 120)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let results = r.events("result")
        #expect(results.count == 180)
        let taken = results.compactMap { line in (line["snapshot"] as? String).map { ($0, line["seq"] as? Int ?? -1, line["plugin_index"] as? Int ?? -1) } }
        // Only a snapshot queue that is full drops one (counted): most are taken, of both plugins.
        #expect(taken.count >= 90 && Set(taken.map(\.2)) == [0, 1], "\(taken.count) snapshots")
        let numbers = try Self.numbers(of: taken.map(\.0))
        for (path, seq, _) in taken { #expect(numbers[path] == seq, "\(path): frame \(numbers[path] ?? -1), its line's seq \(seq)") }
    }

    @Test("an event between two frames the plugin processed (max_fps) has a snapshot of its own frame, not of the frame processed after it")
    func snapshotBetweenDetections() throws {
        let snaps = Self.folder + "/between"
        // At 5 a second the walker's plugin processes frames 0, 6, ... 66, 72; its box (2 pixels a
        // frame) is counted across the line at frame 69, between two of them.
        let r = try CVHostBinary.run(["run", "--plugin", try AnalyticsTests.walker(step: 2) + ":max_fps=5", "--input", try Self.numbered(),
                                      "--max-frames", "90", "--metrics-interval", "0", "--track", "walker", "--line", "door=154,0 154,240",
                                      "--snapshots", snaps + ":on=line.crossed"], timeout: 120, environment: Self.python)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let crossed = try #require(r.events("line.crossed").first)
        let seq = try #require(crossed["seq"] as? Int)
        #expect(seq % 6 != 0, "crossed at a frame processed: \(seq)")
        let snapshot = try #require(crossed["snapshot"] as? String, "\(crossed)")
        #expect(try Self.numbers(of: [snapshot])[snapshot] == seq)
    }

    @Test("an event on a frame whose picture was not kept (more than 32 frames between two detections): its snapshot is of the nearest frame kept, which snapshot_frame names; an event on a kept frame has none")
    func snapshotOfTheNearestFrame() throws {
        let snaps = Self.folder + "/nearest"
        // A box 200 wide moving 1 pixel a frame (60 between two detections: still overlapping),
        // its anchor (bottom centre) at 120 + seq.
        let plugin = Self.folder + "/wide.py"
        try """
            import cvhost

            class Wide(cvhost.Plugin):
                api_version = (1, 0)
                name = "wide"
                pixel_formats = ("gray8",)

                def process(self, frame):
                    self.emit("object", {"label": "bus", "confidence": 0.9,
                                         "bounds": {"x": 20 + frame.sequence, "y": 100, "width": 200, "height": 60}})
            """.write(toFile: plugin, atomically: true, encoding: .utf8)
        // At 0.5 a second the plugin processes frames 0, 60, 120, 180; the box is counted across the
        // line (x 245, a band of 2 px) at frame 128 or so, between 120 and 180 and more than 32
        // frames before 180: only the newest passed over are kept (at most 32).
        let r = try CVHostBinary.run(["run", "--plugin", plugin + ":max_fps=0.5", "--input", try Self.numbered(),
                                      "--max-frames", "200", "--metrics-interval", "0", "--track", "wide:lost=3",
                                      "--line", "door=245,0 245,240:min_distance=2", "--snapshots", snaps + ":on=line.crossed+result"],
                                     timeout: 120, environment: Self.python)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let crossed = try #require(r.events("line.crossed").first)
        let seq = try #require(crossed["seq"] as? Int)
        let nearest = try #require(crossed["snapshot_frame"] as? Int, "\(crossed)")
        #expect(seq > 120 && seq < 148 && nearest > seq && nearest < 180, "crossed at \(seq), its snapshot of \(nearest)")
        let snapshot = try #require(crossed["snapshot"] as? String, "\(crossed)")
        #expect(try Self.numbers(of: [snapshot])[snapshot] == nearest)
        // A result's own frame was processed: kept, no snapshot_frame.
        #expect(r.events("result").allSatisfy { $0["snapshot"] != nil && $0["snapshot_frame"] == nil })
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
    }

    @Test("a plugin that turns its frames (rotate=90, mirror): its snapshot is of the picture it saw, cropped to its box there (the file the line names is made)")
    func turnedFrames() throws {
        let plugin = Self.folder + "/corner.py"
        // In the turned picture (120 wide, 160 high) a box low on the left, where the unturned
        // picture (160x120) has no pixel: a crop of the frame as captured would be outside it.
        try """
            import cvhost

            class Corner(cvhost.Plugin):
                api_version = (1, 0)
                name = "corner"
                pixel_formats = ("gray8",)

                def process(self, frame):
                    if frame.sequence == 2:
                        self.emit("object", {"label": "thing", "confidence": 0.9, "bounds": {"x": 8, "y": 124, "width": 40, "height": 32}})
            """.write(toFile: plugin, atomically: true, encoding: .utf8)
        for turn in ["rotate=90", "rotate=90,mirror=true"] {
            let snaps = Self.folder + "/turned-" + turn.replacingOccurrences(of: ",", with: "-").replacingOccurrences(of: "=", with: "")
            let r = try CVHostBinary.run(["run", "--plugin", plugin + ":" + turn, "--input", "testsrc:160x120@10:unpaced", "--max-frames", "5",
                                          "--metrics-interval", "0", "--snapshots", snaps + ":on=result,crop=true,margin=0"],
                                         timeout: 90, environment: Self.python)
            #expect(r.exitCode == 0, "\(turn): \(r.stderr)")
            let snapshot = try #require(r.events("result").first?["snapshot"] as? String, "\(turn)")
            #expect(FileManager.default.fileExists(atPath: snapshot), "\(turn): \(snapshot)")
            let size = try Tool.run("ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", snapshot]).output
            #expect(size.trimmingCharacters(in: .whitespacesAndNewlines) == "40,32", "\(turn): \(size)")
        }
    }

    @Test("a plugin's numbers cannot end the run: boxes at x 1e300 and -1e30 are refused (counted as invalid, said), a confidence of 1e300 is drawn; frames 1 pixel across get their snapshot")
    func hostileNumbers() throws {
        let path = Self.folder + "/hostile.py"
        try """
            import cvhost

            class Hostile(cvhost.Plugin):
                api_version = (1, 0)
                name = "hostile"
                pixel_formats = ("gray8",)

                def process(self, frame):
                    self.emit("object", {"label": "far", "confidence": 0.5, "bounds": {"x": 1e300, "y": 5, "width": 10, "height": 10}})
                    self.emit("object", {"label": "neg", "confidence": 0.5, "bounds": {"x": -1e30, "y": 5, "width": 10, "height": 10}})
                    self.emit("object", {"label": "loud", "confidence": 1e300, "bounds": {"x": 0, "y": 0, "width": 1, "height": 1}})
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let images = Self.folder + "/thin"
        try FileManager.default.createDirectory(atPath: images, withIntermediateDirectories: true)
        try Tool.check("/usr/bin/python3", ["-c", "import cv2, numpy as np; cv2.imwrite('\(images)/a.png', np.full((1, 1, 3), 200, np.uint8)); "
                                            + "cv2.imwrite('\(images)/b.png', np.full((1, 7, 3), 90, np.uint8)); cv2.imwrite('\(images)/c.png', np.full((9, 1, 3), 40, np.uint8))"])
        for draw in ["false", "true"] {
            let snaps = Self.folder + "/hostile-snaps-\(draw)"
            for crop in ["false", "true"] {
                let r = try CVHostBinary.run(["run", "--plugin", path, "--input", images,
                                              "--snapshots", snaps + "-\(crop):on=result,draw=\(draw),crop=\(crop)"], timeout: 60, environment: Self.python)
                #expect(r.exitCode == 0, "\(r.stderr)")
                #expect(r.stderr.contains("bounds.x is 1e+300, beyond ±655360 pixels") && r.stderr.contains("bounds.x is -1e+30"), "\(r.stderr)")
                let results = r.events("result")
                #expect(results.count == 3 && results.allSatisfy { ($0["data"] as? [String: Any])?["label"] as? String == "loud" })
                let metrics = RunCommandTests.metrics(r, plugin: 0)
                #expect(metrics?["invalid_results"] as? Int == 6, "\(String(describing: metrics))")
                let files = try FileManager.default.contentsOfDirectory(atPath: snaps + "-\(crop)").filter { $0.hasSuffix(".jpg") }
                #expect(files.count == 3, "one snapshot a frame, 1 pixel across too: \(files)")
                for line in results {
                    let file = line["snapshot"] as? String ?? ""
                    #expect(FileManager.default.fileExists(atPath: file), "\(file)")
                }
            }
        }
    }

    @Test("a clip of a live RTSP camera with B-frames (the test server): from a keyframe at or before event - pre to event + post, its frames the camera's own, undecoded and not encoded again (each decoded frame's MD5 a run of the file's, in order)")
    func rtspClip() throws {
        // With B-frames (veryfast): RTP carries no decode times, which the clip's MP4 must have (made up, a frame apart).
        let source = try MediaFixtures.make("evidence-rtsp.mp4", ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "6", "-c:v", "libx264",
                                                                   "-preset", "veryfast", "-bf", "2", "-g", "30", "-pix_fmt", "yuv420p"])
        let server = try TestServer("rtsp_server.py", ["--file", source])
        defer { server.stop() }
        let clips = Self.folder + "/rtsp-clips"
        // block: every frame of the camera processed (a loaded machine drops none), so the event's frame is known.
        let r = try CVHostBinary.run(["run", "--plugin", try Self.plugin(frames: [90]) + ":backpressure=block", "--input",
                                      "rtsp://127.0.0.1:\(server.port)/codes", "--metrics-interval", "0", "--clips", clips + ":on=result,pre=1,post=1"],
                                     timeout: 60, environment: Self.python)
        let result = try #require(r.events("result").first, "\(r.stderr)")
        let eventPts = try #require(result["pts"] as? Double)
        let saved = try #require(r.events("clip.saved").first?["data"] as? [String: Any], "\(r.stderr)")
        let start = try #require(saved["start_pts"] as? Double), end = try #require(saved["end_pts"] as? Double)
        #expect(start <= eventPts - 1 + 1e-3 && end + 1.0 / 30 >= eventPts + 1 - 1e-3, "event at \(eventPts): \(saved)")
        func frames(_ file: String) throws -> [String] {
            try Tool.run("ffmpeg", ["-v", "error", "-i", file, "-f", "framemd5", "-"]).output.split(separator: "\n")
                .filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) } }
        }
        let clip = try frames(try #require(saved["path"] as? String)), all = try frames(source)
        let at = all.firstIndex(of: clip.first ?? "")
        #expect(clip.count >= 55 && at != nil && Array(all[at!..<min(all.count, at! + clip.count)]) == clip,
                "\(clip.count) frames in the clip, the first at \(at.map(String.init) ?? "none") of the file's \(all.count)")
    }

    @Test("a camera's two streams (record=): the plugin reads the 320x240 sub-stream, the clip is the 640x480 main stream's own packets (a run of its frames, undecoded), around the event's moment by the wall clock; the snapshot (from=record) is the main stream's keyframe nearest the event, 640x480; refusals of record= with a file, or not a URL, and of from= neither frame nor record")
    func recordStream() throws {
        func clip(_ size: String) throws -> String {
            try MediaFixtures.make("record-\(size).mp4", ["-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30", "-t", "6", "-c:v", "libx264", "-g", "30",
                                                         "-pix_fmt", "yuv420p"])
        }
        let sub = try clip("320x240"), main = try clip("640x480")
        let server = try TestServer("rtsp_server.py", ["--file", sub, "--also", "main=\(main)"])
        defer { server.stop() }
        let clips = Self.folder + "/record-clips", snapshots = Self.folder + "/record-snapshots"
        let input = "door=rtsp://127.0.0.1:\(server.port)/codes,record=rtsp://127.0.0.1:\(server.port)/main"
        let r = try CVHostBinary.run(["run", "--plugin", try Self.plugin(frames: [90]) + ":backpressure=block", "--input", input,
                                      "--metrics-interval", "0", "--clips", clips + ":on=result,pre=1,post=1",
                                      "--snapshots", snapshots + ":on=result,from=record"], timeout: 60, environment: Self.python)
        let result = try #require(r.events("result").first, "\(r.stderr)")
        let snapshot = try #require(result["snapshot"] as? String, "\(result)")
        let size = try Tool.run("ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", snapshot]).output
        #expect(snapshot.hasSuffix(".jpg") && snapshot.contains("-result-record-") && size.trimmingCharacters(in: .whitespacesAndNewlines) == "640,480",
                "\(snapshot): \(size)")
        let eventWall = try #require(result["ts"] as? Double)
        #expect(r.events("session.started").first?["source"] as? String == "door")
        let saved = try #require(r.events("clip.saved").first?["data"] as? [String: Any], "\(r.stderr)")
        let path = try #require(saved["path"] as? String)
        let codec = try Tool.run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", path]).output
        #expect(codec.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,640,480", "\(codec)")
        // The main stream's packets read around the event's moment (pre and post of 1 s): slack of two
        // frames for the parser's frame of delay and the streams' different starts, and at the end two
        // more: its B-frames come in decode order, and the clip ends at the first packet past post.
        let start = try #require(saved["start_ts"] as? Double), end = try #require(saved["end_ts"] as? Double)
        #expect(start <= eventWall - 1 + 0.07 && end >= eventWall + 1 - 0.14 - 1.0 / 30, "event at \(eventWall): \(saved)")
        func frames(_ file: String) throws -> [String] {
            try Tool.run("ffmpeg", ["-v", "error", "-i", file, "-f", "framemd5", "-"]).output.split(separator: "\n")
                .filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) } }
        }
        let got = try frames(path), all = try frames(main)
        let at = all.firstIndex(of: got.first ?? "")
        #expect(got.count >= 55 && at != nil && Array(all[at!..<min(all.count, at! + got.count)]) == got,
                "\(got.count) frames in the clip, the first at \(at.map(String.init) ?? "none") of the main stream's \(all.count)")
        for (given, said) in [("a.mp4,record=rtsp://cam/main", "record= goes with a network camera's stream"),
                              ("rtsp://cam/sub,record=main.mp4", "record= is the camera's stream to record clips from, a URL")] {
            let refused = try CVHostBinary.run(["run", "--plugin", "null", "--input", given])
            #expect(refused.exitCode == 64 && refused.stderr.contains(said) && refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        }
        do {
            let refused = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "--snapshots", snapshots + ":from=main"])
            let said = "from is frame (the event's own frame) or record"
            #expect(refused.exitCode == 64 && refused.stderr.contains(said) && refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        }
    }

    @Test("a clip of a raw input (the test pattern at 30 fps), its frames encoded with libx264: from a keyframe, about pre + post long, it decodes to its end")
    func rawInput() throws {
        let clips = Self.folder + "/raw-clips"
        let r = try CVHostBinary.run(["run", "--plugin", try Self.plugin(frames: [90]), "--input", "testsrc:320x240@30", "--max-frames", "150",
                                      "--metrics-interval", "0", "--clips", clips + ":on=result,pre=1,post=1"], timeout: 120, environment: Self.python)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let saved = try #require(r.events("clip.saved").first?["data"] as? [String: Any], "\(r.stderr)")
        let path = try #require(saved["path"] as? String)
        let seconds = try #require(saved["seconds"] as? Double)
        // pre + post, and up to one keyframe interval more (the encoder makes a keyframe a second): from
        // the keyframe at or before event - pre. Under load the frames' times and their count drift
        // apart, so where a keyframe falls is not known to a frame.
        #expect(seconds > 1.5 && seconds < 3.1, "\(saved)")
        let flags = try Tool.run("ffprobe", ["-v", "error", "-select_streams", "v", "-show_packets", "-show_entries", "packet=flags", "-of", "csv=p=0", path]).output
        #expect(flags.hasPrefix("K"))
        let codec = try Tool.run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", path]).output
        #expect(codec.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,320,240", "\(codec)")
        #expect((try? Tool.check("ffmpeg", ["-v", "error", "-xerror", "-i", path, "-f", "null", "-"])) != nil)
    }

    @Test("an event before a raw input's encoder has made its first keyframe (a result on frame 0) still gets its clip, from that keyframe (a slow VM's encoder lost it)")
    func eventBeforeFirstKeyframe() throws {
        let clips = Self.folder + "/raw-first-clips"
        let r = try CVHostBinary.run(["run", "--plugin", try Self.plugin(frames: [0]), "--input", "testsrc:320x240@30", "--max-frames", "60",
                                      "--metrics-interval", "0", "--clips", clips + ":on=result,pre=1,post=1"], timeout: 120, environment: Self.python)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let saved = try #require(r.events("clip.saved").first?["data"] as? [String: Any], "\(r.stderr)")
        #expect((saved["packets"] as? Int ?? 0) > 0 && (saved["events"] as? [String])?.count == 1, "\(saved)")
        #expect((saved["start_pts"] as? Double ?? 9) < 0.5, "from the first keyframe: \(saved)")
    }

    @Test("a full disk under the clips (a 2 MB tmpfs): a clip too large for it is not begun, one that fills it is deleted; each said once, no partial file left; the run goes on, exit 0",
          .enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func diskFull() throws {
        // Five quiet seconds (a grey picture: a few KB a second), then five of noise (megabytes a second).
        let spike = try MediaFixtures.make("evidence-spike.mp4", ["-f", "lavfi", "-i", "color=c=gray:s=640x360:r=30:d=5", "-f", "lavfi", "-i",
                                                                  "nullsrc=s=640x360:r=30:d=5,geq=lum='random(1)*255':cb=128:cr=128",
                                                                  "-filter_complex", "[0:v]format=yuv420p[a];[1:v]format=yuv420p[b];[a][b]concat=n=2:v=1",
                                                                  "-c:v", "libx264", "-preset", "ultrafast", "-qp", "10", "-g", "30"])
        for (frames, said) in [([270], "is full (max_gb, min_free_gb) and holds nothing of cvhost's to delete"), ([120], "No space left on device")] {
            let disk = TestFolders.make("clips-disk")
            try Tool.check("mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", disk])
            defer { _ = try? Tool.run("umount", ["-l", disk]) }
            // At 270 (9 s) the noise is in the pre-roll: the clip is known too large before it begins. At 120 (4 s) the
            // pre-roll is quiet and the noise comes after: the disk fills while it is written.
            let r = try CVHostBinary.run(["run", "--plugin", try Self.plugin(frames: frames), "--input", spike, "--metrics-interval", "0",
                                          "--clips", disk + "/clips:on=result,pre=3,post=3,min_free_gb=0", "--events-db", "off"], timeout: 120, environment: Self.python)
            #expect(r.exitCode == 0 && r.events("result").count == 1, "\(r.stderr)")
            #expect(r.stderr.components(separatedBy: said).count - 1 == 1, "\(frames): \(r.stderr)")
            #expect(r.events("clip.saved").isEmpty)
            let left = try FileManager.default.contentsOfDirectory(atPath: disk + "/clips")
            #expect(left == [".cvhost-evidence"], "\(left)")
        }
    }
}
