import CVHostTestSupport
import Foundation
import Testing

/// Plugins written in Python (`--plugin ./x.py`): run by Debian's python3 (numpy, OpenCV's
/// bindings) in worker processes, with the same queues, metrics and output as C plugins.
@Suite("Python plugins")
struct PythonPluginTests {
    static let folder = TestFolders.make("python-plugins")
    /// Debian's python3, with python3-numpy and python3-opencv (scripts/install-deps.sh).
    static let python = ["CVHOST_PYTHON": "/usr/bin/python3"]

    static func plugin(_ name: String, _ body: String) throws -> String {
        let path = folder + "/" + name + ".py"
        try body.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The mean luma of each frame of a video, written by the plugin with numpy: the figure the
    /// test computes itself from the video's Y planes (ffmpeg's raw yuv420p).
    static let meanLuma = """
        import cvhost

        class MeanLuma(cvhost.Plugin):
            api_version = (1, 0)
            name = "mean-luma"
            version = "1.0.0"
            description = "mean luma of each frame"
            pixel_formats = ("gray8",)
            stateless = True
            options = (cvhost.Option("decimals", int, 4, "decimals of the mean", min=0, max=10),
                       cvhost.Option("mode", str, "mean", "what to write", choices=("mean", "max")))

            def __init__(self, options):
                self.decimals = options["decimals"]

            def process(self, frame):
                y = frame.array()
                assert not y.flags.writeable and y.base is not None  # a read-only view, not a copy
                self.emit("luma", {"mean": round(float(y.mean()), self.decimals), "shape": list(y.shape)})
        """

    static func expectedMeans(_ video: String) throws -> [Double] {
        let raw = folder + "/frames.yuv"
        let r = try Tool.run("ffmpeg", ["-v", "error", "-y", "-i", video, "-f", "rawvideo", "-pix_fmt", "yuv420p", raw])
        #expect(r.status == 0, "\(r.output)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
        let (w, h) = (320, 240)
        let frameSize = w * h * 3 / 2
        return stride(from: 0, to: bytes.count, by: frameSize).map { start in
            let y = bytes[start..<start + w * h]
            let mean = Double(y.reduce(0) { $0 + Int($1) }) / Double(w * h)
            return (mean * 10_000).rounded() / 10_000
        }
    }

    @Test("a numpy plugin on a video: a figure per frame equal to the test's own, metrics, and with instances=2 the same results in frame order")
    func endToEnd() throws {
        let path = try Self.plugin("mean_luma", Self.meanLuma)
        let video = try MediaFixtures.h264()
        let expected = try Self.expectedMeans(video)
        #expect(expected.count == 45)
        for instances in [1, 2] {
            let r = try CVHostBinary.run(["run", "--plugin", "\(path):instances=\(instances)", "--input", video, "--metrics-interval", "0"],
                                         timeout: 120, environment: Self.python)
            #expect(r.exitCode == 0, "\(r.stderr)")
            let results = r.events("result")
            #expect(results.compactMap { $0["seq"] as? Int } == Array(0..<45), "instances=\(instances): in frame order")
            #expect(results.compactMap { ($0["data"] as? [String: Any])?["mean"] as? Double } == expected)
            #expect((results.first?["data"] as? [String: Any])?["shape"] as? [Int] == [240, 320])
            let metrics = try #require(r.events("metrics").last)
            let frames = try #require(metrics["frames"] as? [String: Any])
            #expect(frames["processed"] as? Int == 45 && frames["failed"] as? Int == 0 && frames["dropped_total"] as? Int == 0)
            #expect(metrics["instances"] as? Int == instances)
            let worker = try #require(metrics["worker"] as? [String: Any])
            #expect(worker["crashes"] as? Int == 0)
            // One worker per instance, each named.
            let pids = try #require(worker["pids"] as? [Int])
            #expect(pids.count == instances && Set(pids).count == instances && pids.first == worker["pid"] as? Int, "\(worker)")
            #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        }
    }

    @Test("API 1.1: each instance knows which it is of how many before __init__; OptionError and CreateError refuse in one line (exit 18, 16)")
    func instancesAndRefusals() throws {
        // Each instance says which it is in a file of its own, as its __init__ runs: which of them
        // processes the frames depends on the machine's load, which instances are made does not.
        let said = Self.folder + "/which-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: said, withIntermediateDirectories: true)
        let path = try Self.plugin("which_instance", """
            import cvhost

            class Which(cvhost.Plugin):
                api_version = (1, 1)
                name = "which"
                stateless = True
                options = (cvhost.Option("refuse", str, "", "", choices=("", "option", "create")),)

                def __init__(self, options):
                    self.seen = (self.instance_index, self.instance_count)
                    open("\(said)/%d-of-%d" % self.seen, "w").close()
                    if options["refuse"] == "option":
                        raise cvhost.OptionError("refuse=option is refused: as asked")
                    if options["refuse"] == "create":
                        raise cvhost.CreateError("cannot start: as asked")

                def process(self, frame):
                    self.emit("which", {"index": self.seen[0], "count": self.seen[1]})
            """)
        let video = try MediaFixtures.h264()
        let r = try CVHostBinary.run(["run", "--plugin", "\(path):instances=3", "--input", video, "--metrics-interval", "0"],
                                     timeout: 120, environment: Self.python)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let seen = r.events("result").compactMap { $0["data"] as? [String: Int] }
        #expect(!seen.isEmpty && seen.allSatisfy { $0["count"] == 3 && (0..<3).contains($0["index"] ?? -1) }, "\(seen.prefix(5))")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: said)) == ["0-of-3", "1-of-3", "2-of-3"])
        for (refuse, code, says) in [("option", Int32(18), "plugin which: refuse=option is refused: as asked"), ("create", 16, "plugin which: cannot start: as asked")] {
            let refused = try CVHostBinary.run(["run", "--plugin", "\(path):refuse=\(refuse)", "--input", video], timeout: 60, environment: Self.python)
            #expect(refused.exitCode == code && refused.stderr.contains(says) && !refused.stderr.contains("Traceback"), "\(refused.stderr)")
        }
    }

    @Test("the first worker imports the plugin while it is described, side by side; two imports in all; none left after a refused run")
    func warmStart() throws {
        let folder = TestFolders.make("warm-start")
        let log = folder + "/imports"
        // Each import appends its process's role and when it began and ended (a slow import: a model library's).
        let path = try PythonWorkerBoundsTests.plugin(folder, "slow", """
            import sys, time
            import cvhost
            began = time.monotonic()
            time.sleep(1.5)
            with open(\(log.debugDescription), "a") as f:
                f.write(f"{'describe' if 'describe' in sys.argv else 'worker'} {began} {time.monotonic()}\\n")

            class Slow(cvhost.Plugin):
                api_version = (1, 0)
                name = "slow"
                options = (cvhost.Option("n", int, 1, "a number", min=0, max=5),)

                def process(self, frame):
                    self.emit("ok", {})
            """)
        let r = try CVHostBinary.run(["run", "--plugin", path, "--input", "testsrc", "--max-frames", "2"], environment: Self.python)
        #expect(r.exitCode == 0 && r.events("result").count == 2, "\(r.stderr)")
        let imports = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map { $0.split(separator: " ") }
        #expect(imports.map { String($0[0]) }.sorted() == ["describe", "worker"], "\(imports)")
        let describe = try #require(imports.first { $0[0] == "describe" }), worker = try #require(imports.first { $0[0] == "worker" })
        // Side by side: the worker's import began before the description's ended (each takes 1.5 s).
        #expect(Double(worker[1])! < Double(describe[2])!, "\(imports)")
        // A run refused after the description (a bad option value) leaves no worker behind.
        try? FileManager.default.removeItem(atPath: log)
        let refused = try CVHostBinary.run(["run", "--plugin", path + ":n=9", "--input", "testsrc", "--max-frames", "1"], environment: Self.python)
        #expect(refused.exitCode == 18, "\(refused.stderr)")
        let left = try Tool.run("pgrep", ["-f", "preload " + path])
        #expect(left.status == 1, "still running: \(left.output)")
    }

    @Test("its options are listed (cvhost plugins FILE) and checked before it runs: an unknown one is exit 17, a bad value 18, isolation=none 18")
    func options() throws {
        let path = try Self.plugin("options", Self.meanLuma)
        let listed = try CVHostBinary.run(["plugins", path], environment: Self.python)
        #expect(listed.exitCode == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("mean-luma 1.0.0 — mean luma of each frame"))
        #expect(listed.stdout.contains("(Python API 1.0)"))
        #expect(listed.stdout.contains("decimals=4") && listed.stdout.contains("[int 0..10]") && listed.stdout.contains("[mean|max]"))
        let json = try CVHostBinary.run(["plugins", "--json", path], environment: Self.python)
        let line = try #require(json.events("plugin").first)
        #expect(line["runtime"] as? String == "python" && line["abi"] as? String == "1.0")
        #expect((line["options"] as? [[String: Any]])?.map { $0["name"] as? String } == ["decimals", "mode"])
        #expect(try CVHostBinary.schemaProblems(json.stdout) == nil)

        for (option, code, message) in [("colour=red", Int32(17), "has no option 'colour'"), ("decimals=11", 18, "decimals"),
                                        ("mode=median", 18, "mode"), ("isolation=none", 18, "written in Python")] {
            let r = try CVHostBinary.run(["run", "--plugin", "\(path):\(option)", "--input", "testsrc", "--max-frames", "1"],
                                         environment: Self.python)
            #expect(r.exitCode == code, "\(option): \(r.stderr)")
            #expect(r.stderr.contains(message), "\(option): \(r.stderr)")
            #expect(r.stdout.isEmpty)
        }
    }

    @Test("an exception in process() fails that frame only: the run goes on, the failures are counted, the traceback said once")
    func exception() throws {
        let path = try Self.plugin("raises", """
            import cvhost

            class Raises(cvhost.Plugin):
                api_version = (1, 0)
                name = "raises"

                def process(self, frame):
                    if frame.sequence % 3 == 1:
                        raise ValueError("frame %d is odd" % frame.sequence)
                    self.emit("ok", {"seq": frame.sequence})
            """)
        let r = try CVHostBinary.run(["run", "--plugin", path, "--input", "testsrc:160x120:unpaced", "--max-frames", "9",
                                      "--metrics-interval", "0", "--backpressure", "block"], environment: Self.python)
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(r.events("result").compactMap { ($0["data"] as? [String: Any])?["seq"] as? Int } == [0, 2, 3, 5, 6, 8])
        let frames = try #require(r.events("metrics").last?["frames"] as? [String: Any])
        #expect(frames["failed"] as? Int == 3 && frames["processed"] as? Int == 6)
        #expect(r.stderr.components(separatedBy: "Traceback").count == 2, "\(r.stderr)")
        #expect(r.stderr.contains("raises.py\", line 9, in process") && r.stderr.contains("ValueError: frame 1 is odd"))
        #expect(!r.stderr.contains("_worker.py") && !r.stderr.contains("_serving.py"), "the runtime's own frames are not the user's business: \(r.stderr)")
        // Said as what it is, an exception, not as an errno (-5, Input/output error).
        #expect(r.stderr.contains("process() raised an exception on frame 1") && !r.stderr.contains("Input/output error"), "\(r.stderr)")
    }

    @Test("a syntax error or a missing module at start: exit 14 naming the file and line; a newer API: exit 13")
    func startErrors() throws {
        let syntax = try Self.plugin("syntax", "import cvhost\n\nclass A(cvhost.Plugin):\n    api_version = (1, 0)\n    def process(self, frame)\n        pass\n")
        let r = try CVHostBinary.run(["run", "--plugin", syntax, "--input", "testsrc", "--max-frames", "1"], environment: Self.python)
        #expect(r.exitCode == 14)
        #expect(r.stderr.contains("syntax.py:5: SyntaxError"), "\(r.stderr)")
        let missing = try Self.plugin("missing", "import cvhost\nimport no_such_module_here\n")
        let m = try CVHostBinary.run(["run", "--plugin", missing, "--input", "testsrc", "--max-frames", "1"], environment: Self.python)
        #expect(m.exitCode == 14)
        #expect(m.stderr.contains("missing.py:2: ModuleNotFoundError: No module named 'no_such_module_here'"), "\(m.stderr)")
        let newer = try Self.plugin("newer", "import cvhost\nclass N(cvhost.Plugin):\n    api_version = (1, 99)\n    name = 'newer'\n    def process(self, frame): pass\n")
        let n = try CVHostBinary.run(["plugins", newer], environment: Self.python)
        #expect(n.exitCode == 13)
        #expect(n.stderr.contains("written for cvhost's Python API 1.99; this cvhost has 1.4: use a newer cvhost"), "\(n.stderr)")
        let bad = try CVHostBinary.run(["run", "--plugin", Self.folder + "/none.py", "--input", "testsrc"], environment: Self.python)
        #expect(bad.exitCode == 10 && bad.stderr.contains("none.py does not exist"))
    }

    @Test("a process() that never returns is stopped by timeout_ms: plugin.crashed (timeout), a new worker, the run ends")
    func neverReturns() throws {
        let path = try Self.plugin("hangs", """
            import time, cvhost

            class Hangs(cvhost.Plugin):
                api_version = (1, 0)
                name = "hangs"

                def process(self, frame):
                    if frame.sequence == 2:
                        while True:
                            time.sleep(1)
                    self.emit("ok", {"seq": frame.sequence})
            """)
        let r = try CVHostBinary.run(["run", "--plugin", "\(path):timeout_ms=500", "--input", "testsrc:160x120:unpaced", "--max-frames", "4",
                                      "--metrics-interval", "0", "--backpressure", "block"], timeout: 60, environment: Self.python)
        #expect(!r.timedOut)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let crashed = try #require(r.events("plugin.crashed").first)
        #expect(crashed["seq"] as? Int == 2 && crashed["reason"] as? String == "timeout", "\(crashed)")
        #expect(r.stderr.contains("hung in process() of frame 2 for 500 ms"))
    }

    @Test("a reload while frames flow: results from the new code after plugin.reloaded, no frame lost; new code that does not start leaves the old running")
    func reload() throws {
        let path = try Self.plugin("version", """
            import cvhost

            class Version(cvhost.Plugin):
                api_version = (1, 0)
                name = "version"

                def process(self, frame):
                    self.emit("v", {"code": 1})
            """)
        let r = try CVHostBinary.run(["run", "--plugin", path, "--input", "testsrc:160x120@30", "--metrics-interval", "0",
                                      "--backpressure", "block"], timeout: 90, environment: Self.python, withStdin: true) { running in
            #expect(running.wait { $0.contains("\"code\":1") })
            try? String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(of: "\"code\": 1", with: "\"code\": 2")
                .write(toFile: path, atomically: true, encoding: .utf8)
            #expect(running.wait { $0.contains("\"code\":2") }, "the file's change reloads the plugin")
            // A broken version: the old code goes on.
            try? "def broken(\n".write(toFile: path, atomically: true, encoding: .utf8)
            #expect(running.waitForStderr("SyntaxError"))
            // The reload command (stdin; POST /controls takes the same): still broken, said in the answer.
            running.send(#"{"command":"reload","plugin":"version","id":1}"#)
            #expect(running.wait { $0.contains("\"command\":\"reload\"") })
            let before = running.stdout.components(separatedBy: "\"code\":2").count
            #expect(running.wait { $0.components(separatedBy: "\"code\":2").count > before + 5 }, "the old code still runs")
            running.send(#"{"command":"stop"}"#)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(r.events("plugin.reloaded").count == 1)
        let answer = try #require(r.events("command.result").first { $0["command"] as? String == "reload" })
        #expect(answer["ok"] as? Bool == false && (answer["error"] as? String)?.contains("SyntaxError") == true, "\(answer)")
        // Every frame has its result, old code before the reload and new code after it.
        let codes = r.events("result").compactMap { ($0["data"] as? [String: Any])?["code"] as? Int }
        let seqs = r.events("result").compactMap { $0["seq"] as? Int }
        #expect(seqs == Array(0..<seqs.count))
        #expect(codes == codes.sorted() && codes.first == 1 && codes.last == 2)
        let frames = try #require(r.events("metrics").last?["frames"] as? [String: Any])
        #expect(frames["dropped_total"] as? Int == 0 && frames["failed"] as? Int == 0)
        #expect(frames["processed"] as? Int == seqs.count)
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
    }

    @Test("a plugin run from a virtual environment ($VIRTUAL_ENV): its python, its packages; numpy not needed (a memoryview)")
    func virtualEnvironment() throws {
        let venv = Self.folder + "/venv"
        let made = try Tool.run("/usr/bin/python3", ["-m", "venv", "--without-pip", venv])
        #expect(made.status == 0, "\(made.output)")
        let path = try Self.plugin("prefix", """
            import sys, cvhost

            class Prefix(cvhost.Plugin):
                api_version = (1, 0)
                name = "prefix"

                def process(self, frame):
                    row = frame.planes[0].data[:frame.width]  # a memoryview: no numpy in this environment
                    self.emit("prefix", {"prefix": sys.prefix, "first": row[0], "numpy": "numpy" in sys.modules})
            """)
        let r = try CVHostBinary.run(["run", "--plugin", path, "--input", "testsrc:160x120", "--max-frames", "2"],
                                     environment: ["VIRTUAL_ENV": venv, "CVHOST_PYTHON": ""])
        #expect(r.exitCode == 0, "\(r.stderr)")
        let data = try #require(r.events("result").first?["data"] as? [String: Any])
        #expect(data["prefix"] as? String == venv)
        #expect(data["numpy"] as? Bool == false)
    }
}
