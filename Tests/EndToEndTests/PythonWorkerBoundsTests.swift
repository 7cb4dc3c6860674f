import CVHostTestSupport
import Foundation
import Glibc
import Testing

/// What a Python plugin's worker may reach and hold, when the plugin errs or another user plays
/// tricks: the modules it imports, the file it is reloaded from, cvhost's memory, the processes it
/// leaves, the time a stop waits (issue 40's findings, each reproduced first).
@Suite("Python worker bounds")
struct PythonWorkerBoundsTests {
    static let python = PythonPluginTests.python

    static func plugin(_ folder: String, _ name: String, _ body: String) throws -> String {
        let path = folder + "/" + name + ".py"
        try body.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A module that, when imported, leaves a file saying who ran it: `ran-NAME` in `folder`.
    static func planted(_ name: String, in folder: String) -> String {
        "import os\nopen(\(folder.debugDescription) + '/ran-\(name)', 'w').write(str(os.getuid()))\n"
    }

    @Test("modules another user planted in the caller's folder (a sticky one, as /tmp is) are never imported: cv2.py, numpy.py, a cvhost/ package; the plugin's own private folder is on the path")
    func plantedModules() throws {
        try #require(geteuid() == 0, "planting as another user needs root (CI and this machine run as root)")
        let base = TestFolders.make("planted")
        // The caller's folder: sticky and writable by all, with files of `nobody` in it.
        let caller = base + "/shared"
        try FileManager.default.createDirectory(atPath: caller + "/cvhost", withIntermediateDirectories: true)
        chmod(caller, 0o1777)
        for (file, name) in [("cv2.py", "cv2"), ("numpy.py", "numpy"), ("helper.py", "helper-caller"),
                             ("cvhost/__init__.py", "cvhost-init"), ("cvhost/__main__.py", "cvhost-main")] {
            try Self.planted(name, in: caller).write(toFile: caller + "/" + file, atomically: false, encoding: .utf8)
            chown(caller + "/" + file, 65534, 65534)
        }
        // The plugin in a private folder of root's, beside a helper module of its own.
        let own = base + "/own"
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
        try "WORD = 'mine'\n".write(toFile: own + "/helper.py", atomically: true, encoding: .utf8)
        let path = try Self.plugin(own, "uses_modules", """
            import cv2, numpy, helper, cvhost

            class UsesModules(cvhost.Plugin):
                api_version = (1, 0)
                name = "uses-modules"

                def process(self, frame):
                    self.emit("m", {"cv2": cv2.__version__, "mean": float(numpy.asarray(frame.array()).mean()) >= 0, "helper": helper.WORD})
            """)
        for arguments in [["plugins", path], ["run", "--plugin", path, "--input", "testsrc:160x120@30", "--max-frames", "3"]] {
            let r = try CVHostBinary.run(arguments, environment: Self.python, inFolder: caller)
            #expect(r.exitCode == 0, "\(arguments[0]): \(r.stderr)")
            let ran = try FileManager.default.contentsOfDirectory(atPath: caller).filter { $0.hasPrefix("ran-") }
            #expect(ran.isEmpty, "\(arguments[0]) imported what another user planted: \(ran)")
            if arguments[0] == "run" {
                let data = try #require(r.events("result").first?["data"] as? [String: Any])
                #expect(data["helper"] as? String == "mine" && (data["cv2"] as? String)?.hasPrefix("4.") == true, "\(data)")
            }
        }
        // A plugin in the sticky folder itself (allowed: nobody else can replace a file of root's
        // there) does not put that folder on the path: its planted numpy.py stays unimported.
        let inShared = try Self.plugin(caller, "in_shared", """
            import numpy, cvhost

            class InShared(cvhost.Plugin):
                api_version = (1, 0)
                name = "in-shared"

                def process(self, frame):
                    self.emit("n", {"numpy": numpy.__file__})
            """)
        let r = try CVHostBinary.run(["run", "--plugin", inShared, "--input", "testsrc:160x120@30", "--max-frames", "2"],
                                     environment: Self.python, inFolder: caller)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let numpy = try #require((r.events("result").first?["data"] as? [String: Any])?["numpy"] as? String)
        #expect(!numpy.hasPrefix(caller), "\(numpy)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: caller).filter { $0.hasPrefix("ran-") }.isEmpty)
    }

    @Test("a reload checks the file's trust again: a file made writable by others mid-run is not loaded, plugin.reload_failed says why, the old code goes on")
    func reloadChecksTrust() throws {
        let folder = TestFolders.make("reload-trust")
        let path = try Self.plugin(folder, "p", """
            import cvhost

            class P(cvhost.Plugin):
                api_version = (1, 0)
                name = "p"

                def process(self, frame):
                    self.emit("v", {"code": 1})
            """)
        let r = try CVHostBinary.run(["run", "--plugin", path, "--input", "testsrc:160x120@30", "--metrics-interval", "0"],
                                     timeout: 90, environment: Self.python, withStdin: true) { running in
            #expect(running.wait { $0.contains("\"code\":1") })
            try? String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(of: "\"code\": 1", with: "\"code\": 2")
                .write(toFile: path, atomically: false, encoding: .utf8)
            chmod(path, 0o666)
            #expect(running.wait { $0.contains("plugin.reload_failed") }, "the changed file is seen and refused")
            running.send(#"{"command":"reload","plugin":"p","id":7}"#)
            #expect(running.wait { $0.contains("\"id\":7") })
            let before = running.stdout.components(separatedBy: "\"code\":1").count
            #expect(running.wait { $0.components(separatedBy: "\"code\":1").count > before + 3 }, "the old code still runs")
            running.send(#"{"command":"stop"}"#)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(!r.stdout.contains("\"code\":2"), "code from a file others can change ran")
        #expect(r.events("plugin.reloaded").isEmpty)
        let failed = try #require(r.events("plugin.reload_failed").first)
        #expect((failed["reason"] as? String)?.contains("can be written by every user") == true, "\(failed)")
        let answer = try #require(r.events("command.result").first { $0["command"] as? String == "reload" })
        #expect(answer["ok"] as? Bool == false && (answer["error"] as? String)?.contains("CVHOST_UNSAFE_PLUGIN_FILES") == true, "\(answer)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
    }

    /// Whether `pid` is a living process (not a zombie).
    static func alive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return !stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    static func pids(in file: String) -> [Int32] {
        ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { Int32($0) }
    }

    @Test("what a Python plugin's worker starts ends with it: a child, one in a session of its own, a double fork, a fork of the worker")
    func pythonChildren() throws {
        let folder = TestFolders.make("children")
        let pidsFile = folder + "/pids"
        let path = try Self.plugin(folder, "spawns", """
            import os, subprocess, time, cvhost

            class Spawns(cvhost.Plugin):
                api_version = (1, 0)
                name = "spawns"

                def __init__(self, options):
                    pids = [subprocess.Popen(["sleep", "3001"]).pid,
                            subprocess.Popen(["sleep", "3002"], start_new_session=True).pid]
                    r, w = os.pipe()
                    middle = os.fork()
                    if middle == 0:
                        os.setsid()
                        grandchild = subprocess.Popen(["sleep", "3003"]).pid
                        os.write(w, str(grandchild).encode())
                        os._exit(0)
                    os.waitpid(middle, 0)
                    pids.append(int(os.read(r, 32)))
                    forked = os.fork()
                    if forked == 0:
                        time.sleep(3004)  # a copy of the worker, holding its sockets
                        os._exit(0)
                    pids.append(forked)
                    with open(\(pidsFile.debugDescription), "a") as f:
                        f.write("".join("%d\\n" % p for p in pids))

                def process(self, frame):
                    self.emit("ok", {})
            """)
        let r = try CVHostBinary.run(["run", "--plugin", path, "--input", "testsrc:160x120@30", "--max-frames", "3"],
                                     timeout: 60, environment: Self.python)
        #expect(!r.timedOut, "the run waited for what its plugin left running")
        #expect(r.exitCode == 0, "\(r.stderr)")
        let pids = Self.pids(in: pidsFile)
        #expect(pids.count == 4, "\(r.stderr)")
        let left = pids.filter(Self.alive)
        left.forEach { kill($0, SIGKILL) }
        #expect(left.isEmpty, "still running after the run: \(left)")
    }

    @Test("what a C plugin's worker starts ends with it too: a child in its group and a grandchild in a session of its own")
    func cChildren() throws {
        let folder = PluginFixtures.makeFolder()
        let pidsFile = folder + "/pids"
        try PluginFixtures.build(name: "spawner", defines: ["SPAWN_CHILDREN=\"\(pidsFile)\""], in: folder)
        let r = try CVHostBinary.run(["run", "--plugin", "spawner:isolation=process", "--input", "testsrc:160x120@30", "--max-frames", "3"],
                                     timeout: 60, environment: ["CVHOST_PLUGIN_PATH": folder])
        #expect(!r.timedOut, "the run waited for what its plugin left running")
        #expect(r.exitCode == 22, "\(r.stderr)")  // the plugin finds nothing
        let pids = Self.pids(in: pidsFile)
        #expect(pids.count == 2, "\(r.stderr)")
        let left = pids.filter(Self.alive)
        left.forEach { kill($0, SIGKILL) }
        #expect(left.isEmpty, "still running after the run: \(left)")
    }

    @Test("one call may not make cvhost hold unbounded results: past 10,000 results or 16 MiB the worker is ended (reason protocol) and the run goes on")
    func resultFlood() throws {
        let folder = TestFolders.make("flood")
        let path = try Self.plugin(folder, "flood", """
            import cvhost

            class Flood(cvhost.Plugin):
                api_version = (1, 0)
                name = "flood"
                options = (cvhost.Option("mode", str, "count", "what to flood with", choices=("count", "bytes")),)

                def __init__(self, options):
                    self.mode = options["mode"]

                def process(self, frame):
                    if frame.sequence == 1:
                        if self.mode == "count":
                            for i in range(20000):
                                self.emit("many", {"i": i})
                        else:
                            for i in range(40):
                                self.emit("big", {"text": "x" * 900000})
                    self.emit("ok", {"seq": frame.sequence})
            """)
        for mode in ["count", "bytes"] {
            // Live: frames go on while the worker restarts; stopped once the new one has written a result.
            // timeout_ms: a loaded machine may take longer than 5 s to emit 20,000 results (then the call is "hung", not too big).
            let r = try CVHostBinary.run(["run", "--plugin", "\(path):mode=\(mode),timeout_ms=120000", "--input", "testsrc:160x120@30",
                                          "--metrics-interval", "0"],
                                         timeout: 90, environment: Self.python, withStdin: true) { running in
                #expect(running.wait { $0.contains("plugin.restarted") })
                let before = running.stdout.components(separatedBy: "\"ok\"").count
                #expect(running.wait { $0.components(separatedBy: "\"ok\"").count > before })
                running.send(#"{"command":"stop"}"#)
            }
            #expect(r.exitCode == 0, "\(mode): \(r.stderr)")
            let crashed = try #require(r.events("plugin.crashed").first, "\(mode): \(r.stderr)")
            #expect(crashed["reason"] as? String == "protocol" && crashed["seq"] as? Int == 1, "\(crashed)")
            #expect(r.stderr.contains("more than 10000 results or 16 MiB in one call"), "\(r.stderr)")
            #expect(r.events("result").filter { $0["type"] as? String != "ok" }.isEmpty, "\(mode): none of that call's results is written")
            let seqs = r.events("result").compactMap { ($0["data"] as? [String: Any])?["seq"] as? Int }
            #expect(seqs.contains { $0 > 1 }, "the run went on: \(seqs)")
        }
    }

    @Test("emit() from a thread of the plugin's own is refused, said (as the C ABI's -EPERM); numpy numbers and arrays are accepted as JSON values")
    func emitRules() throws {
        let folder = TestFolders.make("emit")
        let path = try Self.plugin(folder, "emits", """
            import threading, time
            import numpy as np
            import cvhost

            class Emits(cvhost.Plugin):
                api_version = (1, 0)
                name = "emits"

                def __init__(self, options):
                    self.refused = []

                def process(self, frame):
                    def other():
                        try:
                            self.emit("async", {"from": "thread"})
                        except RuntimeError as e:
                            self.refused.append(str(e))
                    t = threading.Thread(target=other)
                    t.start()
                    t.join()
                    arr = np.arange(4, dtype=np.int64)
                    self.emit("n", {"sum": arr.sum(), "mean": np.float32(1.5), "flag": np.bool_(True), "arr": arr,
                                    "refused": self.refused[-1] if self.refused else None})
            """)
        let r = try CVHostBinary.run(["run", "--plugin", path, "--input", "testsrc:160x120:unpaced", "--max-frames", "3", "--backpressure", "block"],
                                     environment: Self.python)
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(r.events("result").filter { $0["type"] as? String == "async" }.isEmpty)
        let data = try #require(r.events("result").last?["data"] as? [String: Any], "\(r.stderr)")
        #expect(data["sum"] as? Int == 6 && data["mean"] as? Double == 1.5 && data["flag"] as? Bool == true && data["arr"] as? [Int] == [0, 1, 2, 3],
                "\(data)")
        #expect((data["refused"] as? String)?.contains("emit() was called from a thread of the plugin's own") == true, "\(data)")
    }

    @Test("max_rss_mb holds while a call runs: a process() that allocates far past it and holds it is ended during the call (reason memory)")
    func memoryDuringCall() throws {
        let folder = TestFolders.make("memory")
        let path = try Self.plugin(folder, "hog", """
            import time, cvhost

            class Hog(cvhost.Plugin):
                api_version = (1, 0)
                name = "hog"

                def process(self, frame):
                    if frame.sequence == 1:
                        hog = bytes(range(256)) * (600 * 4096)  # 600 MiB, every page written
                        time.sleep(15)
                    self.emit("ok", {"seq": frame.sequence})
            """)
        let r = try CVHostBinary.run(["run", "--plugin", "\(path):max_rss_mb=150,timeout_ms=30000", "--input", "testsrc:160x120:unpaced",
                                      "--max-frames", "3", "--backpressure", "block", "--metrics-interval", "0"], timeout: 60, environment: Self.python)
        #expect(!r.timedOut)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let crashed = try #require(r.events("plugin.crashed").first, "\(r.stderr)")
        #expect(crashed["reason"] as? String == "memory" && crashed["seq"] as? Int == 1 && crashed["callback"] as? String == "process", "\(crashed)")
        #expect(r.stderr.contains("(max_rss_mb=150) in process() of frame 1"), "\(r.stderr)")
    }

    @Test("max_rss_mb holds while a plugin starts: a create() that allocates far past it is ended then, a one-line refusal, not after its first frame")
    func memoryDuringCreate() throws {
        let folder = TestFolders.make("memory-create")
        let path = try Self.plugin(folder, "hog_at_start", """
            import time, cvhost

            class Hog(cvhost.Plugin):
                api_version = (1, 0)
                name = "hog-at-start"

                def __init__(self, options):
                    self.hog = bytes(range(256)) * (600 * 4096)  # 600 MiB, every page written
                    time.sleep(15)

                def process(self, frame):
                    self.emit("ok", {"seq": frame.sequence})
            """)
        let r = try CVHostBinary.run(["run", "--plugin", "\(path):max_rss_mb=150,timeout_ms=30000", "--input", "testsrc:160x120:unpaced",
                                      "--max-frames", "3", "--metrics-interval", "0"], timeout: 60, environment: Self.python)
        #expect(!r.timedOut && r.exitCode != 0, "\(r.stderr)")
        #expect(r.stderr.contains("(max_rss_mb=150) while starting (create()): its worker was killed"), "\(r.stderr)")
        #expect(r.events("result").isEmpty)
    }

    @Test("a stop while a Python plugin's import hangs ends the run at once (exit 0: nothing had run), not after the minute an import may take")
    func stopDuringImport() throws {
        let folder = TestFolders.make("slow-import")
        let marker = folder + "/importing"
        let path = try Self.plugin(folder, "slow", """
            import time, cvhost
            open(\(marker.debugDescription), "w").close()
            time.sleep(600)

            class Slow(cvhost.Plugin):
                api_version = (1, 0)
                name = "slow"

                def process(self, frame):
                    pass
            """)
        let r = try CVHostBinary.run(["run", "--plugin", path, "--input", "testsrc:160x120@30"], timeout: 30, environment: Self.python,
                                     withStdin: false) { running in
            for _ in 0..<200 where !FileManager.default.fileExists(atPath: marker) { usleep(100_000) }
            kill(running.pid, SIGTERM)
        }
        #expect(!r.timedOut, "the stop waited for the import")
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(r.stderr.contains("stopped while") && r.stderr.contains("nothing had run yet"), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }
}

/// A Python runtime of another cvhost (CVHOST_PYTHON_RUNTIME) is refused before the plugin runs.
@Suite("Python runtime versions")
struct PythonRuntimeVersionTests {
    @Test("a runtime that speaks another worker protocol, or none (an older cvhost's): exit 13 naming the runtime and both versions")
    func mismatchedRuntime() throws {
        let folder = TestFolders.make("runtime")
        let runtime = PluginFixtures.packageRoot + "/Sources/CVHostPlugins/python"
        let plugin = try PythonWorkerBoundsTests.plugin(folder, "p", """
            import cvhost

            class P(cvhost.Plugin):
                api_version = (1, 0)
                name = "p"

                def process(self, frame):
                    self.emit("ok", {})
            """)
        for (version, said) in [("99", "speaks worker protocol 99"), ("None", "speaks worker protocol 1")] {
            let copy = folder + "/runtime-\(version)"
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.copyItem(atPath: runtime, toPath: copy)
            let protocolFile = copy + "/cvhost/_protocol.py"
            // Whatever version this runtime speaks, the copy speaks another.
            try String(contentsOfFile: protocolFile, encoding: .utf8)
                .replacingOccurrences(of: "(?m)^PROTOCOL_VERSION = [0-9]+$", with: "PROTOCOL_VERSION = \(version)", options: .regularExpression)
                .write(toFile: protocolFile, atomically: true, encoding: .utf8)
            if version == "None" {
                // As a runtime from before the version: describe says none.
                let loader = copy + "/cvhost/_loader.py"
                try String(contentsOfFile: loader, encoding: .utf8).replacingOccurrences(of: "\"protocol\": PROTOCOL_VERSION,\n", with: "")
                    .write(toFile: loader, atomically: true, encoding: .utf8)
            }
            let r = try CVHostBinary.run(["run", "--plugin", plugin, "--input", "testsrc", "--max-frames", "1"],
                                         environment: PythonWorkerBoundsTests.python.merging(["CVHOST_PYTHON_RUNTIME": copy]) { $1 })
            #expect(r.exitCode == 13 && r.stderr.contains(said) && r.stderr.contains(copy), "\(version): \(r.stderr)")
            #expect(r.stdout.isEmpty)
        }
    }
}

/// Mistakes a new Python plugin author makes, each said where it is made (issue 39's section 4).
@Suite("Python plugin mistakes")
struct PythonPluginMistakeTests {
    static let python = PythonWorkerBoundsTests.python

    @Test("a typo for process (def proces) is exit 14 at load, naming it; stateless = False with instances=2 is exit 18; a missing module names the python3 and CVHOST_PYTHON")
    func atLoad() throws {
        let folder = TestFolders.make("mistakes")
        let typo = try PythonWorkerBoundsTests.plugin(folder, "typo", """
            import cvhost

            class Typo(cvhost.Plugin):
                api_version = (1, 0)
                name = "typo"

                def proces(self, frame):
                    self.emit("x", {})
            """)
        for arguments in [["plugins", typo], ["run", "--plugin", typo, "--input", "testsrc", "--max-frames", "1"]] {
            let r = try CVHostBinary.run(arguments, environment: Self.python)
            #expect(r.exitCode == 14 && r.stderr.contains("Typo defines no process(self, frame) (did you mean to name 'proces' process?)"),
                    "\(arguments[0]): \(r.stderr)")
        }
        let stateful = try PythonWorkerBoundsTests.plugin(folder, "stateful", """
            import cvhost

            class Stateful(cvhost.Plugin):
                api_version = (1, 0)
                name = "stateful"

                def process(self, frame):
                    self.emit("x", {})
            """)
        let s = try CVHostBinary.run(["run", "--plugin", "\(stateful):instances=2", "--input", "testsrc", "--max-frames", "1"], environment: Self.python)
        #expect(s.exitCode == 18 && s.stderr.contains("keeps state between frames (stateless = False): instances=2"), "\(s.stderr)")
        let missing = try PythonWorkerBoundsTests.plugin(folder, "missing", "import cvhost\nimport no_such_module_anywhere\n")
        let m = try CVHostBinary.run(["plugins", missing], environment: Self.python)
        #expect(m.exitCode == 14 && m.stderr.contains("with /usr/bin/python3") && m.stderr.contains("CVHOST_PYTHON"), "\(m.stderr)")
    }

    /// Runs the plugin `body`, waits for a line with `seen`, changes its file (`from` to `to`) and
    /// expects the reload refused, `reason` in plugin.reload_failed, and no line with `notSeen`.
    static func expectReloadRefused(_ name: String, _ body: String, seen: String, change from: String, to: String,
                                    reason: String, notSeen: String) throws {
        let path = try PythonWorkerBoundsTests.plugin(TestFolders.make("reload-\(name)"), name, body)
        let r = try CVHostBinary.run(["run", "--plugin", path, "--input", "testsrc:160x120@30", "--metrics-interval", "0"],
                                     timeout: 90, environment: Self.python, withStdin: true) { running in
            #expect(running.wait { $0.contains(seen) })
            try? String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(of: from, with: to)
                .write(toFile: path, atomically: true, encoding: .utf8)
            #expect(running.wait { $0.contains("plugin.reload_failed") })
            running.send(#"{"command":"stop"}"#)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        let failed = try #require(r.events("plugin.reload_failed").first)
        #expect((failed["reason"] as? String)?.contains(reason) == true, "\(failed)")
        #expect(!r.stdout.contains(notSeen))
    }

    @Test("a reload whose file changes pixel_formats or options is refused (plugin.reload_failed naming what changed): they are applied at start")
    func reloadChangingDeclarations() throws {
        try Self.expectReloadRefused("d", """
            import cvhost

            class D(cvhost.Plugin):
                api_version = (1, 0)
                name = "d"
                pixel_formats = ("gray8",)

                def process(self, frame):
                    self.emit("v", {"format": frame.format})
            """, seen: "\"format\":\"gray8\"", change: "(\"gray8\",)", to: "(\"bgr24\",)",
            reason: "changed pixel_formats (gray8 -> bgr24)", notSeen: "\"format\":\"bgr24\"")
    }

    @Test("a reload whose plugin asks for frames of another size (request_frames) is refused: the output is set up at start; the old code goes on")
    func reloadChangingFrameRequest() throws {
        try Self.expectReloadRefused("f", """
            import cvhost

            class F(cvhost.Plugin):
                api_version = (1, 1)
                name = "f"

                def __init__(self, options):
                    self.request_frames(32, 32, "stretch")

                def process(self, frame):
                    self.emit("v", {"width": frame.width})
            """, seen: "\"width\":32", change: "request_frames(32, 32", to: "request_frames(48, 48",
            reason: "asks for other frames", notSeen: "\"width\":48")
    }
}
