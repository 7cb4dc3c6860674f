import CVHostTestSupport
import Foundation
import Testing

/// The cvhost binary as users run it: output contract, back-pressure, exit codes, signals.
@Suite("cvhost run, end to end", .serialized)
struct RunCommandTests {
    static func metrics(_ r: CommandResult, plugin index: Int) -> [String: Any]? {
        r.events("metrics", plugin: index).last { $0["final"] as? Bool == true }
    }

    static func frames(_ m: [String: Any]?) -> [String: Any] { m?["frames"] as? [String: Any] ?? [:] }

    static func expectValid(_ r: CommandResult, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(!r.timedOut, "cvhost did not finish", sourceLocation: sourceLocation)
        let problems = try CVHostBinary.schemaProblems(r.stdout)
        #expect(problems == nil, "stdout does not match the schema: \(problems ?? "")", sourceLocation: sourceLocation)
    }

    @Test("a slow plugin drops late frames and does not slow a fast one beside it")
    func slowAndFast() throws {
        // No figure here depends on how fast this machine is at the moment (the suite runs beside
        // OpenCV, an emulated VM, and in CI beside stress-ng): each bound is one that only a defect
        // crosses. The slow plugin takes 200 ms a frame, so in 3 s it can finish at most 15 frames,
        // plus the 2 still queued at the stop (processed, not lost), plus the one in its hands.
        let r = try CVHostBinary.run(["run", "--plugin", "null:delay_ms=200", "--plugin", "null:results=1",
                                      "--input", "testsrc:160x120@60", "--duration", "3", "--metrics-interval", "1"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        try RunCommandTests.expectValid(r)
        let slow = RunCommandTests.frames(RunCommandTests.metrics(r, plugin: 0))
        let fast = RunCommandTests.frames(RunCommandTests.metrics(r, plugin: 1))
        let slowBound = 3 * 5 + 2 + 1
        let slowProcessed = try #require(slow["processed"] as? Int)
        #expect(slowProcessed > 0 && slowProcessed <= slowBound, "\(slow)")
        // Every frame either plugin missed is a counted drop, and the slow one did miss frames: a
        // source held back to its pace would have offered no more than it could take.
        for counts in [slow, fast] {
            #expect((counts["processed"] as? Int ?? -1) + (counts["dropped_total"] as? Int ?? -1) == counts["offered"] as? Int, "\(counts)")
        }
        #expect(((slow["dropped"] as? [String: Int])?["late"] ?? 0) > 0, "\(slow)")
        // The fast plugin was not held to the slow one's pace: it finished more frames than the
        // slow one could have, and its results are one per frame it processed.
        let fastProcessed = try #require(fast["processed"] as? Int)
        #expect(fastProcessed > slowBound, "\(fast)")
        #expect(r.events("result", plugin: 1).count == fastProcessed)
        // Periodic metrics came before the final ones, and session.stopped is the last line.
        #expect(r.events("metrics", plugin: 0).count >= 2)
        #expect(r.events.last?["event"] as? String == "session.stopped")
        #expect(r.events.last?["reason"] as? String == "duration")
    }

    @Test("a video file is read whole in block mode: every frame processed, results in frame order")
    func videoFileBlocks() throws {
        let clip = try MediaFixtures.h264()
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1,delay_ms=2", "--input", clip])
        #expect(r.exitCode == 0, "\(r.stderr)")
        try RunCommandTests.expectValid(r)
        let results = r.events("result")
        #expect(results.compactMap { $0["seq"] as? Int } == Array(0..<45))
        let f = RunCommandTests.frames(RunCommandTests.metrics(r, plugin: 0))
        #expect(f["processed"] as? Int == 45 && f["dropped_total"] as? Int == 0)
        #expect(r.events.first?["event"] as? String == "session.started")
        #expect(r.events.last?["reason"] as? String == "end_of_input")
    }

    @Test("a truncated video: the frames that decode are processed, and the cut is said on stdout (session.error input_incomplete) and by exit 2")
    func truncatedVideo() throws {
        // The index (moov) first, as streaming-friendly files have it, so the cut loses only frames.
        let clip = try MediaFixtures.make("clip-faststart.mp4", MediaFixtures.pattern + ["-frames:v", "45", "-c:v", "libx264",
                                                                                       "-pix_fmt", "yuv420p", "-movflags", "+faststart"])
        let whole = try Data(contentsOf: URL(fileURLWithPath: clip))
        let cut = PluginFixtures.makeFolder() + "/truncated.mp4"
        try whole.prefix(whole.count * 2 / 3).write(to: URL(fileURLWithPath: cut))
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", cut])
        #expect(r.exitCode == 2, "\(r.stderr)")
        try RunCommandTests.expectValid(r)
        let results = r.events("result").count
        #expect(results > 5 && results < 45)
        let error = try #require(r.events("session.error").first)
        #expect(error["code"] as? String == "input_incomplete")
        #expect((error["message"] as? String)?.contains("ends after \(results) of the 45 frames its index lists") == true, "\(error)")
        #expect(r.events.last?["reason"] as? String == "error")
        // One line from cvhost, none of FFmpeg's own decoder messages.
        #expect(r.stderr.contains("damaged packets skipped") && !r.stderr.contains("[h264 @"), "\(r.stderr)")

        // Cut before its index (moov at the end, FFmpeg's default): the file cannot be opened at all.
        let plain = try Data(contentsOf: URL(fileURLWithPath: try MediaFixtures.h264()))
        let headless = PluginFixtures.makeFolder() + "/no-index.mp4"
        try plain.prefix(plain.count / 2).write(to: URL(fileURLWithPath: headless))
        let refused = try CVHostBinary.run(["run", "--plugin", "null", "--input", headless])
        #expect(refused.exitCode == 3 && refused.stdout.isEmpty && refused.stderr.contains("no-index.mp4"), "\(refused.stderr)")
    }

    @Test("every line names its producer: the host, and a session id shared by every input of a run and new in the next; and its own event_id")
    func producer() throws {
        let args = ["run", "--plugin", "null:results=1", "--input", "a=testsrc:160x120:unpaced", "--input", "b=testsrc:160x120:unpaced",
                    "--max-frames", "5"]
        let first = try CVHostBinary.run(args)
        let second = try CVHostBinary.run(args)
        #expect(first.exitCode == 0 && second.exitCode == 0, "\(first.stderr) \(second.stderr)")
        try RunCommandTests.expectValid(first)
        let hosts = Set(first.events.compactMap { $0["host"] as? String })
        let sessions = Set(first.events.compactMap { $0["session"] as? String })
        #expect(hosts.count == 1, "\(hosts)")
        #expect(sessions.count == 1 && first.events.allSatisfy { $0["session"] != nil }, "\(sessions)")
        #expect(Set(second.events.compactMap { $0["session"] as? String }).isDisjoint(with: sessions))
        let started = first.events("session.started")
        #expect(started.count == 2 && started.allSatisfy { ($0["cvhost_version"] as? String)?.isEmpty == false })
        // Each line its own id, SESSION-N, right after the session: none twice, in this run or the next.
        let ids = first.events.compactMap { $0["event_id"] as? String }
        #expect(ids.count == first.events.count && Set(ids).count == ids.count, "\(ids.prefix(5))")
        #expect(ids.allSatisfy { $0.hasPrefix(sessions.first! + "-") && UInt64($0.dropFirst(37)).map { $0 > 0 } == true }, "\(ids.prefix(5))")
        #expect(Set(second.events.compactMap { $0["event_id"] as? String }).isDisjoint(with: ids))
        #expect(first.lines.allSatisfy { $0.contains("\"session\":\"\(sessions.first!)\",\"event_id\":") })
        // Lines of no input carry them too.
        let plugins = try CVHostBinary.run(["plugins", "--json"])
        #expect(!plugins.events.isEmpty && plugins.events.allSatisfy { $0["host"] as? String == hosts.first && ($0["session"] as? String)?.count == 36 },
                "\(plugins.stdout.prefix(300))")
    }

    @Test("parallel instances give the same output, in the same order, as one")
    func parallelInstancesKeepOrder() throws {
        let clip = try MediaFixtures.h264()
        func resultData(_ args: String) throws -> [String] {
            let r = try CVHostBinary.run(["run", "--plugin", "null:\(args)", "--input", clip])
            #expect(r.exitCode == 0, "\(r.stderr)")
            return r.comparableResults
        }
        let one = try resultData("results=2")
        let four = try resultData("results=2,instances=4,delay_ms=3")
        #expect(one.count == 90)
        #expect(four == one)
        let auto = try CVHostBinary.run(["run", "--plugin", "null:instances=auto", "--input", clip, "-q"])
        let summary = (auto.events("session.started").first?["plugins"] as? [[String: Any]])?.first
        #expect(summary?["instances"] as? Int == ProcessInfo.processInfo.activeProcessorCount)
    }

    @Test("every stdout line stays valid whatever a plugin emits; refused results are counted")
    func hostileResults() throws {
        let folder = PluginFixtures.makeFolder()
        let plugin = try PluginFixtures.build(name: "garbage", defines: ["EMIT_GARBAGE"], in: folder)
        let r = try CVHostBinary.run(["run", "--plugin", plugin, "--input", "testsrc:unpaced", "--max-frames", "10", "-q"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        try RunCommandTests.expectValid(r)
        let good = r.events("result")
        #expect(good.count == 10)
        #expect((good.first?["data"] as? [String: Any])?["text"] as? String == "tab\tand \"quote\" é")
        #expect(RunCommandTests.metrics(r, plugin: 0)?["invalid_results"] as? Int == 70)
    }

    @Test("max_fps caps the frames one plugin sees, by media time; the others see all")
    func frameRateCap() throws {
        let r = try CVHostBinary.run(["run", "--plugin", "null:max_fps=10,results=1", "--plugin", "null:results=1",
                                      "--input", "testsrc:320x240@30:unpaced", "--max-frames", "30", "-q"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        let capped = r.events("result").filter { $0["plugin_index"] as? Int == 0 }.compactMap { $0["seq"] as? Int }
        #expect(capped == Array(stride(from: 0, to: 30, by: 3)))
        #expect(r.events("result").filter { $0["plugin_index"] as? Int == 1 }.count == 30)
        let dropped = RunCommandTests.frames(RunCommandTests.metrics(r, plugin: 0))["dropped"] as? [String: Int]
        #expect(dropped?["frame_rate_cap"] == 20)
        #expect((r.events("session.started").first?["plugins"] as? [[String: Any]])?.first?["max_fps"] as? Double == 10)
    }

    @Test("mirror and rotate turn the frames one plugin sees; a plugin beside it sees them upright")
    func turnedFrames() throws {
        let r = try CVHostBinary.run(["run", "--plugin", "null:rotate=90,mirror=true,results=1", "--plugin", "null:results=1",
                                      "--input", "testsrc:64x48:unpaced", "--max-frames", "3", "-q"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        try RunCommandTests.expectValid(r)
        let sizes = r.events("result").map { e -> [Int] in
            let d = e["data"] as? [String: Any] ?? [:]
            return [e["plugin_index"] as? Int ?? -1, d["width"] as? Int ?? 0, d["height"] as? Int ?? 0]
        }
        #expect(sizes.filter { $0[0] == 0 }.allSatisfy { $0 == [0, 48, 64] } && sizes.filter { $0[0] == 0 }.count == 3)
        #expect(sizes.filter { $0[0] == 1 }.allSatisfy { $0 == [1, 64, 48] } && sizes.filter { $0[0] == 1 }.count == 3)
        let plugins = r.events("session.started").first?["plugins"] as? [[String: Any]] ?? []
        #expect(plugins.map { $0["rotate"] as? Int } == [90, 0] && plugins.map { $0["mirror"] as? Bool } == [true, false])
    }

    @Test("process() failures are counted and the run goes on")
    func processFailures() throws {
        let r = try CVHostBinary.run(["run", "--plugin", "null:fail_every=3,results=1", "--input", "testsrc:unpaced", "--max-frames", "30", "-q"])
        #expect(r.exitCode == 0)
        let f = RunCommandTests.frames(RunCommandTests.metrics(r, plugin: 0))
        #expect(f["failed"] as? Int == 10 && f["processed"] as? Int == 20)
        #expect(r.events.last?["reason"] as? String == "frame_limit")
    }

    /// SIGHUP: a closed terminal or ssh session, a service reload; never a silent death.
    @Test("SIGINT, SIGTERM and SIGHUP stop cleanly: final metrics, then session.stopped, exit 0", arguments: [SIGINT, SIGTERM, SIGHUP])
    func signalStops(_ signal: Int32) throws {
        // Once the run is running (its handlers set), not after a guessed pause.
        let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc:320x240@30"], timeout: 30, withStdin: false) { running in
            _ = running.wait { $0.contains("\"event\":\"session.started\"") }
            kill(running.pid, signal)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        try RunCommandTests.expectValid(r)
        let names = r.events.suffix(2).compactMap { $0["event"] as? String }
        #expect(names == ["metrics", "session.stopped"])
        #expect(r.events.last?["reason"] as? String == "signal")
    }

    @Test("started ignoring SIGHUP (nohup), cvhost keeps ignoring it; SIGTERM still stops it cleanly")
    func nohup() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        // `trap '' HUP` is what nohup does: SIGHUP ignored, and so it stays across exec.
        p.arguments = ["-c", "trap '' HUP; exec '\(CVHostBinary.path)' run --plugin null:results=1 --input testsrc:160x120@10 -q --metrics-interval 0"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        // Results counted as they come: the run is running (its handlers set) before the SIGHUP,
        // and goes on producing after it.
        let results = Box(0)
        let lock = NSLock()
        let reader = Thread {
            while case let data = out.fileHandleForReading.availableData, !data.isEmpty {
                let n = String(decoding: data, as: UTF8.self).components(separatedBy: "\"event\":\"result\"").count - 1
                lock.withLock { results.value += n }
            }
        }
        reader.start()
        func waitFor(_ count: Int) -> Bool {
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                if lock.withLock({ results.value }) >= count { return true }
                usleep(20_000)
            }
            return false
        }
        #expect(waitFor(2), "the run never produced a result")
        kill(p.processIdentifier, SIGHUP)
        let afterHUP = lock.withLock { results.value }
        #expect(waitFor(afterHUP + 5) && p.isRunning, "SIGHUP stopped a run started under nohup")
        kill(p.processIdentifier, SIGTERM)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
    }

    @Test("testsrc's media time is exact to the microsecond (0.100000, not 0.099999); metrics say the interval fps covers")
    func testPatternTimes() throws {
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "testsrc:160x120@30", "--max-frames", "7",
                                      "--metrics-interval", "0"], timeout: 30)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let stamps = r.stdout.split(separator: "\n").filter { $0.contains("\"event\":\"result\"") }
            .compactMap { line in line.firstRange(of: "\"pts\":").map { String(line[$0.upperBound...].prefix { $0 != "," }) } }
        #expect(stamps == ["0.000000", "0.033333", "0.066667", "0.100000", "0.133333", "0.166667", "0.200000"], "\(stamps)")
        let metrics = try #require(r.events("metrics").last)
        let interval = try #require(metrics["interval_s"] as? Double)
        #expect(interval > 0 && metrics["fps"] is Double)
    }

    @Test("a second SIGINT while a slow plugin holds the stop: exit 130 at once, every line written whole")
    func secondSignal() throws {
        let r = try CVHostBinary.run(["run", "--plugin", "null:delay_ms=4000", "--input", "testsrc:320x240@30",
                                      "--backpressure", "block"], timeout: 30, withStdin: false) { running in
            _ = running.wait { $0.contains("\"event\":\"session.started\"") }
            kill(running.pid, SIGINT)
            // More than a second later: a second request (repeats within a second are the same stop).
            usleep(1_300_000)
            kill(running.pid, SIGINT)
        }
        #expect(r.exitCode == 130, "\(r.stderr)")
        #expect(r.stderr.contains("exiting without final metrics") && !r.stderr.contains("ended the process"), "\(r.stderr)")
        try RunCommandTests.expectValid(r)
    }

    @Test("a closed stdout ends the run quietly")
    func closedStdout() throws {
        let r = try CVHostBinary.runIntoClosingReader(["run", "--plugin", "null:results=5", "--input", "testsrc:320x240@200"])
        #expect(!r.timedOut, "cvhost kept running after its reader left")
        #expect(r.exitCode == 0)
        #expect(!r.stderr.contains("error"), "\(r.stderr)")
    }

    @Test("the example plugin in plain C loads by path")
    func examplePlugin() throws {
        let folder = PluginFixtures.makeFolder()
        let plugin = try PluginFixtures.build(name: "brightness", source: PluginFixtures.packageRoot + "/examples/c-plugin/brightness.c",
                                              in: folder)
        let r = try CVHostBinary.run(["run", "--plugin", plugin + ":threshold=200", "--input", "testsrc:unpaced", "--max-frames", "5"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        let data = r.events("result").compactMap { $0["data"] as? [String: Any] }
        #expect(data.count == 5)
        #expect(data.allSatisfy { ($0["mean"] as? Double ?? 0) > 50 && $0["dark"] as? Bool == true })
    }

    @Test("still images by glob, through the same plugin")
    func images() throws {
        // A folder of its own: other suites add more stills to the shared fixture folder.
        let dir = PluginFixtures.makeFolder()
        try FileManager.default.copyItem(atPath: try MediaFixtures.image("png"), toPath: dir + "/a.png")
        try FileManager.default.copyItem(atPath: try MediaFixtures.image("jpg"), toPath: dir + "/b.jpg")
        try "not an image".write(toFile: dir + "/notes.txt", atomically: true, encoding: .utf8)
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", dir + "/*.*"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        try RunCommandTests.expectValid(r)
        #expect(r.events("result").compactMap { $0["image"] as? String } == [dir + "/a.png", dir + "/b.jpg"])
        #expect((r.events("session.started").first?["device"] as? [String: Any])?["kind"] as? String == "images")
    }
}
