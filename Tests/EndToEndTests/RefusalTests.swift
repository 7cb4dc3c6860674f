import CVHostTestSupport
import Foundation
import Testing

/// Every refusal of the command line: one clear line on stderr, its documented exit code,
/// nothing on stdout.
@Suite("cvhost refusals and exit codes")
struct RefusalTests {
    static let folder = PluginFixtures.makeFolder()

    static func expectRefusal(_ args: [String], code: Int32, mentions: String,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let r = try CVHostBinary.run(args, timeout: 30)
        #expect(r.exitCode == code, "exit \(r.exitCode), stderr: \(r.stderr)", sourceLocation: sourceLocation)
        #expect(r.stdout.isEmpty, "stdout: \(r.stdout)", sourceLocation: sourceLocation)
        #expect(r.stderr.contains(mentions), "stderr: \(r.stderr)", sourceLocation: sourceLocation)
        #expect(!r.stderr.contains("Fatal error"), sourceLocation: sourceLocation)
    }

    @Test("plugin refusals (10-18)")
    func pluginRefusals() throws {
        let src = ["--input", "testsrc", "--max-frames", "1"]
        try RefusalTests.expectRefusal(["run", "--plugin", "nosuchplugin"] + src, code: 10, mentions: "libcvhost-nosuchplugin.so")
        let text = RefusalTests.folder + "/libcvhost-text.so"
        try "not ELF".write(toFile: text, atomically: true, encoding: .utf8)
        try RefusalTests.expectRefusal(["run", "--plugin", text] + src, code: 11, mentions: "cannot load plugin")
        let noEntry = try PluginFixtures.build(name: "noentry", defines: ["BREAK_NO_ENTRY"], in: RefusalTests.folder)
        try RefusalTests.expectRefusal(["run", "--plugin", noEntry] + src, code: 12, mentions: "exports no cvhost_plugin descriptor")
        let abi = try PluginFixtures.build(name: "abi", defines: ["BREAK_ABI"], in: RefusalTests.folder)
        try RefusalTests.expectRefusal(["run", "--plugin", abi] + src, code: 13, mentions: "built for plugin ABI 3.")
        let abi1 = try PluginFixtures.build(name: "abione", defines: ["BREAK_ABI1"], in: RefusalTests.folder)
        try RefusalTests.expectRefusal(["run", "--plugin", abi1] + src, code: 13, mentions: "built for plugin ABI 1")
        let flag = try PluginFixtures.build(name: "newflag", defines: ["BREAK_UNKNOWN_FLAG"], in: RefusalTests.folder)
        try RefusalTests.expectRefusal(["run", "--plugin", flag] + src, code: 13, mentions: "use a newer cvhost")
        let noProcess = try PluginFixtures.build(name: "noprocess", defines: ["BREAK_PROCESS"], in: RefusalTests.folder)
        try RefusalTests.expectRefusal(["run", "--plugin", noProcess] + src, code: 14, mentions: "process")
        try RefusalTests.expectRefusal(["run", "--plugin", "Bad!Name"] + src, code: 15, mentions: "not a plugin name")
        let noCreate = try PluginFixtures.build(name: "nocreate", defines: ["BREAK_CREATE"], in: RefusalTests.folder)
        try RefusalTests.expectRefusal(["run", "--plugin", noCreate] + src, code: 16, mentions: "model file /nonexistent/model.bin is missing")
        try RefusalTests.expectRefusal(["run", "--plugin", "null:colour=red"] + src, code: 17, mentions: "has no option 'colour'")
        try RefusalTests.expectRefusal(["run", "--plugin", "null:delay_ms=soon"] + src, code: 18, mentions: "delay_ms=soon")
        try RefusalTests.expectRefusal(["run", "--plugin", "null:results"] + src, code: 18, mentions: "results=VALUE")
        try RefusalTests.expectRefusal(["run", "--plugin", "null:rotate=45"] + src, code: 18, mentions: "rotate=45")
    }

    @Test("a plugin that crashes the process is named: exit 19, session.error as the last line")
    func pluginCrash() throws {
        for (name, define, signal) in [("segv", "CRASH_ON_FRAME=3", "SIGSEGV"), ("aborts", "ABORT_ON_FRAME=3", "SIGABRT")] {
            let plugin = try PluginFixtures.build(name: name, defines: [define], in: RefusalTests.folder)
            let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--plugin", plugin, "--input", "testsrc:160x120:unpaced",
                                          "--max-frames", "100", "--backpressure", "block"], timeout: 30)
            #expect(r.exitCode == 19, "exit \(r.exitCode), stderr: \(r.stderr)")
            #expect(r.stderr.contains("plugin \(name) crashed (\(signal)") && r.stderr.contains("while processing frame 3"), "\(r.stderr)")
            // Every line is whole and valid; the last one names the plugin and the frame.
            #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
            let last = try #require(r.events.last)
            #expect(last["event"] as? String == "session.error" && last["code"] as? String == "plugin_crashed", "\(last)")
            #expect(last["plugin"] as? String == name && last["plugin_index"] as? Int == 1 && last["seq"] as? Int == 3)
            // Written by the signal handler, it still names its producer as every other line does.
            let first = try #require(r.events.first)
            #expect(last["session"] as? String == first["session"] as? String && last["host"] as? String == first["host"] as? String)
            #expect(r.stdout.hasSuffix("}\n"))
        }
    }

    @Test("a plugin that calls exit(0) does not end the run as a success: exit 19, session.error plugin_exited as the last line")
    func pluginExits() throws {
        for (name, defines, named) in [("exits", ["EXIT_ON_FRAME=3"], true), ("threadexits", ["EXIT_ON_FRAME=3", "EXIT_FROM_THREAD"], false)] {
            let plugin = try PluginFixtures.build(name: name, defines: defines, in: RefusalTests.folder)
            let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--plugin", plugin, "--input", "testsrc:160x120:unpaced",
                                          "--max-frames", "100", "--backpressure", "block"], timeout: 30)
            #expect(r.exitCode == 19, "\(name): exit \(r.exitCode), stderr: \(r.stderr)")
            #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
            let last = try #require(r.events.last)
            #expect(last["event"] as? String == "session.error" && last["code"] as? String == "plugin_exited", "\(last)")
            if named {
                #expect(last["plugin"] as? String == name && last["seq"] as? Int == 3, "\(last)")
                #expect(r.stderr.contains("plugin \(name) ended the process (it called exit()) while processing frame 3"), "\(r.stderr)")
            } else {
                #expect(last["plugin"] is NSNull && r.stderr.contains("a plugin's own thread ended the process"), "\(r.stderr)")
            }
        }
    }

    @Test("a plugin that hangs cannot hold a stop: SIGTERM, --duration or the end of input end the run in 5 s with exit 20, final metrics naming the hung call")
    func pluginHangs() throws {
        let inProcess = try PluginFixtures.build(name: "hangs", defines: ["HANG_ON_FRAME=5"], in: RefusalTests.folder)
        let inFlush = try PluginFixtures.build(name: "hangsflush", defines: ["HANG_IN_FLUSH"], in: RefusalTests.folder)
        let live = ["--input", "testsrc:160x120@30", "--metrics-interval", "0"]
        let runs: [(String, [String], String, String, ((Process) -> Void)?)] = [
            ("SIGTERM", ["--plugin", "null:results=1", "--plugin", inProcess] + live, "process", "signal", { p in
                usleep(2_000_000)
                kill(p.processIdentifier, SIGTERM)
            }),
            ("--duration", ["--plugin", "null:results=1", "--plugin", inProcess, "--duration", "2"] + live, "process", "duration", nil),
            ("end of input", ["--plugin", "null:results=1", "--plugin", inFlush, "--input", "testsrc:160x120:unpaced", "--max-frames", "20",
                              "--metrics-interval", "0"], "flush", "frame_limit", nil),
        ]
        for (what, args, callback, reason, onStart) in runs {
            let r = try CVHostBinary.run(["run"] + args, timeout: 40, onStart: onStart)
            #expect(!r.timedOut && r.exitCode == 20, "\(what): exit \(r.exitCode), stderr: \(r.stderr)")
            #expect(try CVHostBinary.schemaProblems(r.stdout) == nil, "\(what)")
            // The other plugin's results came on; both plugins' final metrics, then session.stopped.
            #expect(r.events("result").count >= 5, "\(what)")
            let tail = r.events.suffix(3)
            #expect(tail.compactMap { $0["event"] as? String } == ["metrics", "metrics", "session.stopped"], "\(what)")
            #expect(tail.last?["reason"] as? String == reason, "\(what): \(tail.last ?? [:])")
            let hung = tail.compactMap { $0["hung"] as? [String: Any] }
            #expect(hung.count == 1 && hung.first?["callback"] as? String == callback, "\(what): \(hung)")
            if callback == "process" { #expect(hung.first?["seq"] as? Int == 5) }
            #expect(r.stderr.contains("hung in \(callback)()") && r.stderr.contains("exit code 20"), "\(what): \(r.stderr)")
        }
            // destroy() after the last lines: the lines stay whole and last, exit 20 after 5 s.
        let inDestroy = try PluginFixtures.build(name: "hangsdestroy", defines: ["HANG_IN_DESTROY"], in: RefusalTests.folder)
        let r = try CVHostBinary.run(["run", "--plugin", inDestroy, "--input", "testsrc:160x120:unpaced", "--max-frames", "10",
                                      "--metrics-interval", "0"], timeout: 40)
        #expect(!r.timedOut && r.exitCode == 20, "exit \(r.exitCode), stderr: \(r.stderr)")
        #expect(r.events.last?["event"] as? String == "session.stopped" && r.stderr.contains("hung in destroy()"), "\(r.stderr)")
    }

    @Test("a plugin that writes to stdout cannot reach the JSON lines: its text goes to stderr")
    func pluginPrints() throws {
        for (name, defines) in [("chatty", ["PRINT_TO_STDOUT"]), ("chattyflush", ["PRINT_TO_STDOUT", "PRINT_FLUSH"])] {
            let plugin = try PluginFixtures.build(name: name, defines: defines, in: RefusalTests.folder)
            let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--plugin", plugin, "--input", "testsrc:160x120:unpaced",
                                          "--max-frames", "60", "--backpressure", "block", "--metrics-interval", "0"], timeout: 30)
            #expect(r.exitCode == 0, "\(r.stderr)")
            #expect(try CVHostBinary.schemaProblems(r.stdout) == nil, "\(name)")
            #expect(r.lines.allSatisfy { $0.hasPrefix("{\"event\":") }, "\(name): \(r.lines.filter { !$0.hasPrefix("{") }.prefix(3))")
            #expect(r.events("result").count == 60)
            #expect(r.stderr.contains("raw write") && r.stderr.contains("loaded!"), "\(name)")
            #expect(!r.stdout.contains("chatter") && !r.stdout.contains("raw write"))
        }
        // Started without stderr (2>&-): the plugin's text goes nowhere, still not into the JSON lines.
        let chatty = try PluginFixtures.build(name: "chatty", defines: ["PRINT_TO_STDOUT"], in: RefusalTests.folder)
        let command = [CVHostBinary.path, "run", "--plugin", "null:results=1", "--plugin", chatty, "--input", "testsrc:160x120:unpaced",
                       "--max-frames", "30", "--backpressure", "block", "--metrics-interval", "0"].map { "'\($0)'" }.joined(separator: " ")
        let closed = try Tool.run("/bin/bash", ["-c", command + " 2>&-"])
        #expect(closed.status == 0)
        let lines = closed.output.split(separator: "\n")
        #expect(lines.count == 30 + 4 && lines.allSatisfy { $0.hasPrefix("{\"event\":") }, "\(lines.filter { !$0.hasPrefix("{") }.prefix(3))")
        #expect(try CVHostBinary.schemaProblems(closed.output) == nil)
        // Listing plugins loads them: a constructor's banner goes to stderr, the listing stays whole.
        let listed = try CVHostBinary.run(["plugins", "--json"], environment: ["CVHOST_PLUGIN_PATH": RefusalTests.folder])
        #expect(try CVHostBinary.schemaProblems(listed.stdout) == nil && !listed.stdout.contains("loaded!"))
        let text = try CVHostBinary.run(["plugins"], environment: ["CVHOST_PLUGIN_PATH": RefusalTests.folder])
        #expect(text.stdout.contains("chatty 0.0.1") && !text.stdout.contains("loaded!"))
    }

    @Test("emit() from a plugin's own thread is refused with -EPERM and counted, never a race; results in process() are whole")
    func emitFromAnotherThread() throws {
        let plugin = try PluginFixtures.build(name: "threademit", defines: ["EMIT_FROM_THREAD"], in: RefusalTests.folder)
        let r = try CVHostBinary.run(["run", "--plugin", plugin, "--input", "testsrc:160x120:unpaced", "--max-frames", "300",
                                      "--backpressure", "block", "--metrics-interval", "0"], timeout: 60)
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        let results = r.events("result")
        // Every frame's own result, stamped with its frame; nothing from the other thread.
        #expect(results.count == 300 && results.allSatisfy { $0["type"] as? String == "sync" })
        #expect(results.allSatisfy { ($0["data"] as? [String: Any])?["thread_accepted"] as? Int == 0 })
        #expect(results.allSatisfy { ($0["data"] as? [String: Any])?["seq"] as? Int == $0["seq"] as? Int })
        let metrics = try #require(r.events("metrics").last)
        #expect((metrics["invalid_results"] as? Int ?? 0) > 0)
        #expect(r.stderr.contains("emit() refused"))
    }

    @Test("stdout on a full disk: exit 4 and a clear line, not a quiet success")
    func fullDisk() throws {
        for command in ["run --plugin null --input testsrc:unpaced --max-frames 50", "plugins --json"] {
            let r = try Tool.run("bash", ["-c", "\"$0\" \(command) > /dev/full", CVHostBinary.path])
            #expect(r.status == 4, "\(command): exit \(r.status), \(r.output)")
            #expect(r.output.contains("cannot write to stdout: No space left on device"), "\(r.output)")
        }
    }

    @Test("plugins are found through CVHOST_PLUGIN_PATH")
    func pluginPath() throws {
        try PluginFixtures.build(name: "viapath", in: RefusalTests.folder)
        let r = try CVHostBinary.run(["run", "--plugin", "viapath", "--input", "testsrc", "--max-frames", "2", "-q"],
                                     environment: ["CVHOST_PLUGIN_PATH": "/nonexistent:" + RefusalTests.folder])
        #expect(r.exitCode == 22, "\(r.stderr)")  // found, loaded and run; it finds nothing
        let listed = try CVHostBinary.run(["plugins", "--json"], environment: ["CVHOST_PLUGIN_PATH": RefusalTests.folder])
        #expect(listed.events("plugin").compactMap { $0["plugin"] as? String }.contains("viapath"))
        #expect(listed.events("plugin").compactMap { $0["plugin"] as? String }.contains("null"))
        #expect(try CVHostBinary.schemaProblems(listed.stdout) == nil)
        // Broken files in the search path are reported on stderr, not fatal.
        #expect(listed.stderr.contains("libcvhost-abi.so") || listed.stderr.contains("libcvhost-text.so") || listed.stderr.isEmpty)
    }

    @Test("an installed cvhost finds its plugins in <prefix>/lib/cvhost/plugins")
    func installFolder() throws {
        // The layout scripts/install.sh makes, with the debug build's files.
        let prefix = PluginFixtures.makeFolder()
        let fm = FileManager.default
        try fm.createDirectory(atPath: prefix + "/bin", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: prefix + "/lib/cvhost/plugins", withIntermediateDirectories: true)
        try fm.copyItem(atPath: CVHostBinary.path, toPath: prefix + "/bin/cvhost")
        let built = (CVHostBinary.path as NSString).deletingLastPathComponent
        try fm.copyItem(atPath: built + "/libcvhost-null.so", toPath: prefix + "/lib/cvhost/plugins/libcvhost-null.so")
        let text = try Tool.check(prefix + "/bin/cvhost", ["run", "--plugin", "null:results=1", "--input", "testsrc:unpaced",
                                                          "--max-frames", "3", "-q"])
        #expect(text.contains(prefix + "/bin/../lib/cvhost/plugins/libcvhost-null.so") || text.contains(prefix + "/lib/cvhost/plugins/libcvhost-null.so"))
        #expect(text.components(separatedBy: "\"event\":\"result\"").count - 1 == 3)
    }

    @Test("a mistyped option is named as unknown, with the nearest option, also when a value follows it (exit 64)")
    func mistypedOptions() throws {
        for (typo, meant) in [("--max-frame", "--max-frames"), ("--inptu", "--input"), ("--plugins", "--plugin"), ("--metric-interval", "--metrics-interval")] {
            try RefusalTests.expectRefusal(["run", "--plugin", "null", "--input", "testsrc", typo, "3"], code: 64,
                                           mentions: "unknown option '\(typo)': did you mean '\(meant)'?")
        }
        try RefusalTests.expectRefusal(["run", "--plugin", "null", "--input", "testsrc", "--frobnicate"], code: 64,
                                       mentions: "unknown option '--frobnicate' (cvhost run --help lists them)")
        // A value after -- is not an option.
        try RefusalTests.expectRefusal(["run", "--plugin", "null", "--input", "testsrc", "--", "--frobnicate"], code: 64,
                                       mentions: "unexpected argument '--frobnicate'")
    }

    @Test("a plugin path that cannot be read says why: a symbolic link loop (10), a folder (11), a missing file (10)")
    func unreadablePluginPaths() throws {
        let folder = PluginFixtures.makeFolder()
        try FileManager.default.createSymbolicLink(atPath: folder + "/loop.so", withDestinationPath: folder + "/loop.so")
        try FileManager.default.createDirectory(atPath: folder + "/dir.so", withIntermediateDirectories: true)
        try RefusalTests.expectRefusal(["run", "--plugin", folder + "/loop.so", "--input", "testsrc"], code: 10,
                                       mentions: "cannot be reached: Too many levels of symbolic links")
        try RefusalTests.expectRefusal(["run", "--plugin", folder + "/dir.so", "--input", "testsrc"], code: 11,
                                       mentions: "cannot read the file: it is not a regular file")
        try RefusalTests.expectRefusal(["run", "--plugin", folder + "/none.so", "--input", "testsrc"], code: 10, mentions: "does not exist")
    }

    @Test("a plugin built against the frozen ABI 2.0 header processes every frame")
    func abi20Runs() throws {
        let plugin = try PluginFixtures.build(name: "old", in: RefusalTests.folder, includeDir: PluginFixtures.frozenABI20IncludeDir)
        let r = try CVHostBinary.run(["run", "--plugin", plugin, "--input", "testsrc:160x120:unpaced", "--max-frames", "20",
                                      "--backpressure", "block", "--metrics-interval", "0"], timeout: 30)
        // Its process() emits nothing: exit 22 (nothing found), and every frame processed, none failed.
        #expect(r.exitCode == 22, "\(r.stderr)")
        let frames = try #require(r.events("metrics").first?["frames"] as? [String: Any])
        #expect(frames["processed"] as? Int == 20 && frames["failed"] as? Int == 0, "\(frames)")
    }

    @Test("input refusals (3) and command-line refusals (64)")
    func inputAndUsage() throws {
        try RefusalTests.expectRefusal(["run", "--plugin", "null", "--input", "/nonexistent/clip.mp4"], code: 3, mentions: "not found")
        try RefusalTests.expectRefusal(["run", "--plugin", "null", "--input", "testsrc:10x10"], code: 3, mentions: "testsrc size")
        let text = RefusalTests.folder + "/clip.mp4"
        try "not a video".write(toFile: text, atomically: true, encoding: .utf8)
        try RefusalTests.expectRefusal(["run", "--plugin", "null", "--input", text], code: 3, mentions: "clip.mp4")
        try RefusalTests.expectRefusal(["run", "--input", "testsrc"], code: 64, mentions: "--plugin")
        // No --input and no --device: the first camera. Whatever cameras this machine has, the run
        // sees none: a mount namespace of its own with an empty folder over sysfs' list of them.
        let empty = PluginFixtures.makeFolder()
        let noCamera = try Tool.run("unshare", ["-m", "/bin/sh", "-c",
                                                "if [ -d /sys/class/video4linux ]; then mount --bind '\(empty)' /sys/class/video4linux || exit 99; fi; "
                                                + "exec '\(CVHostBinary.path)' run --plugin null"])
        #expect(noCamera.status == 3 && noCamera.output.contains("no camera found"), "\(noCamera.status): \(noCamera.output)")
        try RefusalTests.expectRefusal(["run", "--plugin", "null", "--device", "/dev/nonexistent"], code: 3, mentions: "not found")
        try RefusalTests.expectRefusal(["run", "--plugin", "null", "--input", "testsrc", "--backpressure", "sometimes"],
                                       code: 64, mentions: "backpressure")
        try RefusalTests.expectRefusal(["run", "--plugin", "null", "--input", "testsrc", "--queue-depth", "0"], code: 64,
                                       mentions: "queue-depth")
        try RefusalTests.expectRefusal(["run", "--plugin", "null", "--control", "loudness=3"], code: 64, mentions: "unknown control 'loudness'")
        try RefusalTests.expectRefusal(["run", "--plugin", "null", "--input", "testsrc", "--format", "640x480"], code: 64,
                                       mentions: "apply to cameras")
    }

    @Test("rough edges of the command line: a huge --duration, an unquoted glob, --plugins, a plugin file without ./, a bad symbology")
    func roughEdges() throws {
        // Seconds whose nanoseconds overflow 64 bits were a runtime trap (SIGILL).
        for option in ["--duration", "--metrics-interval", "--open-timeout"] {
            try RefusalTests.expectRefusal(["run", "--plugin", "null", "--input", "testsrc", option, "1e300"], code: 64,
                                           mentions: "\(option) must be")
        }
        // The shell expanded shots/*.png into several words.
        try RefusalTests.expectRefusal(["run", "--plugin", "null", "--input", "a.png", "b.png", "c.png"], code: 64,
                                       mentions: "unexpected arguments 'b.png', 'c.png': every input needs its own --input (an unquoted glob")
        try RefusalTests.expectRefusal(["run", "--plugins", "barcode", "--input", "testsrc"], code: 64,
                                       mentions: "unknown option '--plugins': did you mean '--plugin'?")
        // A plugin file in the current folder, named without ./ (dlopen would search the library path).
        let plugin = try PluginFixtures.build(name: "herefile", in: RefusalTests.folder)
        let r = try Tool.run(CVHostBinary.path, ["run", "--plugin", "libcvhost-herefile.so", "--input", "testsrc", "--max-frames", "1"],
                             currentDirectory: RefusalTests.folder)
        #expect(r.status == 10 && r.output.contains("write ./libcvhost-herefile.so"), "\(r.output)")
        let dotted = try Tool.run(CVHostBinary.path, ["run", "--plugin", "./libcvhost-herefile.so", "--input", "testsrc", "--max-frames", "1", "-q"],
                                  currentDirectory: RefusalTests.folder)
        #expect(dotted.status == 22, "\(dotted.output)")  // loaded and run: it finds nothing
        #expect(FileManager.default.fileExists(atPath: plugin))
        // A symbology the barcode plugin does not know is a bad option value (18), not a failed create (16).
        try RefusalTests.expectRefusal(["run", "--plugin", "barcode:symbologies=qr", "--input", "testsrc"], code: 18,
                                       mentions: "unknown symbology 'qr'")
    }

    @Test("--help documents the exit codes")
    func help() throws {
        let r = try CVHostBinary.run(["--help"])
        #expect(r.exitCode == 0)
        #expect(r.stdout.contains("EXIT CODES") && r.stdout.contains("13   plugin ABI version mismatch"))
        let run = try CVHostBinary.run(["run", "--help"])
        #expect(run.stdout.contains("drop-late") && run.stdout.contains("instances=N"))
        // Examples, the plugins that come with cvhost, the exit codes, named values, wall-clock --duration.
        #expect(run.stdout.contains("EXAMPLES\n  cvhost run --plugin barcode"))
        for plugin in ["barcode", "face", "motion", "null"] { #expect(run.stdout.contains("\n  \(plugin) "), "\(plugin)") }
        #expect(run.stdout.contains("EXIT CODES") && run.stdout.contains("22   "))
        #expect(run.stdout.contains("--max-frames <count>") && !run.stdout.contains("<max-frames>") && !run.stdout.contains("<queue-depth>"))
        #expect(run.stdout.contains("wall-clock"))
        #expect(run.stdout.contains("CONFIG FILE"))
        // No paragraph is cut mid-sentence by a hard line break (the text wraps at 80 columns by itself).
        for command in ["devices", "plugins"] {
            let help = try CVHostBinary.run([command, "--help"]).stdout
            let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
            for (line, next) in zip(lines, lines.dropFirst())
            where line.count < 60 && !line.isEmpty && !line.hasSuffix(".") && !line.hasSuffix(":") && !next.isEmpty && next.first != " " {
                Issue.record("\(command) --help breaks a sentence after: \(line)")
            }
        }
    }
}
