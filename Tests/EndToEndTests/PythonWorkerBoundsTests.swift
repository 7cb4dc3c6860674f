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
}
