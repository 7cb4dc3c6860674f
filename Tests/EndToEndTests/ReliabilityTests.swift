import CVHostTestSupport
import Foundation
import Testing

/// Faults a run must come through whatever the world around it does (issue 31's fault review).
@Suite("reliability")
struct ReliabilityTests {
    static let folder = TestFolders.make("reliability")

    @Test("a stdout reader that stops reading cannot freeze a run: --duration and SIGTERM end it, exit 4, the loss said",
          arguments: ["--duration 3", "sigterm"])
    func stalledReader(stop: String) throws {
        let fifo = Self.folder + "/out-\(stop.hasPrefix("--") ? "duration" : "signal").fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        // A reader that opens the FIFO and never reads from it.
        let holder = try LoneProcess("python3", ["-c", "import os, sys, time\nfd = os.open(sys.argv[1], os.O_RDONLY)\ntime.sleep(300)", fifo])
        defer { holder.stop() }
        // At 640x480@30 with 5 results a frame, the pipe (64 KiB) is full within two seconds.
        let run = "\"$0\" run --plugin null:results=5 --input testsrc:640x480@30 --metrics-interval 1 -q"
        let command = stop.hasPrefix("--")
            ? "exec timeout -s KILL 60 \(run) \(stop) > \(fifo)"
            // The watch for a frozen run is a loop in this shell, not a sleeper in the background:
            // a sleeper would hold this shell's descriptors, and Tool.run would wait for it.
            : "\(run) > \(fifo) & pid=$!; sleep 4; kill -TERM $pid; "
                + "for i in $(seq 500); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done; kill -KILL $pid 2>/dev/null; wait $pid"
        let r = try Tool.run("bash", ["-c", command, CVHostBinary.path])
        // 137 would be the watch's SIGKILL (timeout's, or the loop's after 50 s): the run froze.
        #expect(r.status == 4, "exit \(r.status): \(r.output)")
        #expect(r.output.contains("stdout's reader stopped reading: the run was stopped and"), "\(r.output)")
    }
}

extension ReliabilityTests {
    @Test("a stop while the run still waits (an input that does not open, a required broker that does not answer) ends it at once, exit 0",
          arguments: ["fifo", "broker"])
    func stopWhileStarting(waitingFor: String) throws {
        var arguments = ["run", "--plugin", "null", "--open-timeout", "60"]
        var listener: LoneProcess?
        if waitingFor == "fifo" {
            let fifo = Self.folder + "/in-\(UUID().uuidString.prefix(6)).fifo"
            #expect(mkfifo(fifo, 0o600) == 0)
            arguments += ["--input", fifo]  // no writer: opening it waits
        } else {
            // A server that takes the connection and never answers MQTT's CONNECT.
            let port = freeLoopbackPort()
            listener = try LoneProcess("python3", ["-c", "import socket, sys, time\ns = socket.socket()\n"
                + "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(('127.0.0.1', int(sys.argv[1])))\ns.listen()\n"
                + "c = s.accept()\ntime.sleep(300)", String(port)])
            usleep(300_000)
            arguments += ["--input", "testsrc", "--output", "mqtt://127.0.0.1:\(port)/t?required=true"]
        }
        defer { listener?.stop() }
        var stopped = false
        let r = try CVHostBinary.run(arguments, timeout: 50) { process in
            Thread.sleep(forTimeInterval: 2)
            stopped = process.isRunning
            kill(process.processIdentifier, SIGTERM)
        }
        #expect(stopped, "it was still waiting when stopped: \(r.stderr)")
        #expect(!r.timedOut && r.exitCode == 0, "exit \(r.exitCode): \(r.stderr)")
        #expect(r.stderr.contains(waitingFor == "fifo" ? "stopped while opening the inputs" : "stopped while opening the outputs"), "\(r.stderr)")
    }
}

extension ReliabilityTests {
    @Test("a full disk under --output file: the file keeps whole lines only, lost lines are counted by what was written, and lines after space is freed start lines of their own",
          .enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func fullDisk() throws {
        let disk = Self.folder + "/disk-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        try Tool.check("mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", disk])
        defer { _ = try? Tool.run("umount", ["-l", disk]) }
        // All of the disk but 16 KiB, taken by a file that is removed while the run goes on.
        let filler = disk + "/filler"
        try Tool.check("dd", ["if=/dev/zero", "of=" + filler, "bs=4096", "count=60", "status=none"])
        let path = disk + "/results.jsonl"
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=4", "--input", "testsrc:64x48@100", "--metrics-interval", "0",
                                      "--output", "file:" + path, "--output", "-"], timeout: 90, withStdin: false) { run in
            if run.waitForStderr("cannot write to \(path): No space left on device") {
                unlink(filler)
                if run.waitForStderr("writing to \(path) again") {
                    let written = run.stdout.utf8.count
                    run.wait { $0.utf8.count > written + 20_000 }
                }
            }
            kill(run.pid, SIGTERM)
        }
        #expect(r.stderr.contains("writing to \(path) again"), "\(r.stderr)")
        #expect(r.exitCode == 4, "lines were lost: \(r.stderr)")
        // Every line of the file is a whole line of stdout's, in stdout's order: none cut short,
        // none glued to the start of another.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.hasSuffix("\n"))
        let fileLines = text.split(separator: "\n").map(String.init)
        var rest = r.lines[...]
        for line in fileLines {
            guard let at = rest.firstIndex(of: line) else {
                Issue.record("a line of the file is not one of stdout's: \(line.prefix(300))")
                break
            }
            rest = rest[(at + 1)...]
        }
        // The loss said on stderr is counted by what reached the file.
        let said = try #require(r.stderr.firstMatch(of: #/(\d+) lines did not reach file:[^ ]+ \(write_failed \d+\); (\d+) did/#),
                                "\(r.stderr)")
        #expect(Int(said.output.2) == fileLines.count, "\(said.output.0) with \(fileLines.count) lines in the file")
        #expect(Int(said.output.1)! + Int(said.output.2)! == r.lines.count)
    }
}

extension ReliabilityTests {
    @Test("short of memory or threads: exit 7 and one line naming what could not be had; no trap, no hang, no partial line",
          arguments: ["memory", "thread"])
    func outOfResources(what: String) throws {
        // Memory: a 400 MB address space holds cvhost (its libraries, libavfilter's among them, take
        // over 300) but not its 8K frames (50 MB each). A thread: with 1 GB of stack reserved for
        // each new thread, a 3 GB space holds only the first ones.
        let limits = what == "memory" ? "ulimit -v 400000" : "ulimit -v 3000000; ulimit -s 1000000"
        let size = what == "memory" ? "7680x4320" : "640x480"
        let r = try Tool.run("bash", ["-c", "\(limits); exec \"$0\" run --plugin null --plugin null:isolation=process "
                                            + "--input testsrc:\(size)@30 --max-frames 10 --metrics-interval 0 2>&1", CVHostBinary.path])
        #expect(r.status == 7, "exit \(r.status): \(r.output.suffix(800))")
        #expect(r.output.contains("cvhost: error: out of resources: "), "\(r.output.suffix(800))")
        if what == "thread" { #expect(r.output.contains("a thread (")) }
        #expect(!r.output.contains("Fatal error") && !r.output.contains("Backtrac"))
        // Every line is whole: a JSON line, or one of cvhost's messages.
        for line in r.output.split(separator: "\n") {
            #expect(line.hasPrefix("{\"event\":") && line.hasSuffix("}") || line.hasPrefix("cvhost: "), "\(line.prefix(200))")
        }
    }
}

extension ReliabilityTests {
    /// A copy of the null plugin at `name` (bytes, as bash's printf makes them) in a new folder.
    static func nullPluginCopy(named name: String, folderMode: mode_t = 0o755) throws -> (folder: String, shell: String) {
        let folder = Self.folder + "/plugins-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        chmod(folder, folderMode)
        let null = PluginFixtures.packageRoot + "/.build/debug/libcvhost-null.so"
        try Tool.check("bash", ["-c", "install -m 755 \"$0\" \"$1/\"$(printf '\(name)')", null, folder])
        return (folder, "\"\(folder)/\"$(printf '\(name)')")
    }

    @Test("a plugin file whose name is not UTF-8 loads, in cvhost's process and in a worker; output names it with \\x escapes")
    func nonUTF8PluginPath() throws {
        let (_, path) = try Self.nullPluginCopy(named: "caf\\xe9.so")
        for isolation in ["none", "process"] {
            let r = try Tool.run("bash", ["-c", "exec \"$0\" run --plugin \(path)\":results=1,isolation=\(isolation)\" "
                                                 + "--input testsrc:unpaced --max-frames 2 --metrics-interval 0 2>&1", CVHostBinary.path])
            #expect(r.status == 0, "\(isolation): \(r.output.suffix(600))")
            #expect(r.output.components(separatedBy: "\"event\":\"result\"").count == 3, "\(isolation)")
            #expect(r.output.contains(#"caf\\xe9.so"#), "the path as text: \(r.output.prefix(1500))")
        }
    }

    @Test("a plugin file that another user could change is refused (exit 24), as ssh refuses such keys; CVHOST_UNSAFE_PLUGIN_FILES=1 loads it",
          arguments: ["file", "folder", "owner"])
    func pluginOthersCanChange(what: String) throws {
        let (folder, path) = try Self.nullPluginCopy(named: "libcvhost-null.so", folderMode: what == "folder" ? 0o777 : 0o755)
        let file = folder + "/libcvhost-null.so"
        if what == "file" { chmod(file, 0o757) }
        if what == "owner" { chown(file, 65534, 65534) }  // nobody
        let run = "\"$0\" run --plugin \(path):results=1 --input testsrc:unpaced --max-frames 1 --metrics-interval 0"
        let refused = try Tool.run("bash", ["-c", "exec \(run) 2>&1", CVHostBinary.path])
        let said = ["file": "the file can be written by every user", "folder": "its folder \(folder) can be written by every user",
                    "owner": "the file belongs to another user (uid 65534)"][what]!
        #expect(refused.status == 24, "\(what): \(refused.output)")
        #expect(refused.output.contains("plugin file \(file) is not loaded: \(said)") && refused.output.contains("CVHOST_UNSAFE_PLUGIN_FILES=1"),
                "\(refused.output)")
        #expect(!refused.output.contains("\"event\""), "nothing ran")
        // By name, from CVHOST_PLUGIN_PATH, the same.
        let byName = try Tool.run("bash", ["-c", "CVHOST_PLUGIN_PATH=\"$1\" exec \"$0\" run --plugin null --input testsrc --max-frames 1 2>&1",
                                           CVHostBinary.path, folder])
        #expect(byName.status == 24, "\(what) by name: \(byName.output)")
        let allowed = try Tool.run("bash", ["-c", "CVHOST_UNSAFE_PLUGIN_FILES=1 exec \(run) 2>&1", CVHostBinary.path])
        #expect(allowed.status == 0 && allowed.output.contains("warning: loading \(file) although \(said)"), "\(allowed.output)")
        #expect(allowed.output.components(separatedBy: "warning: loading").count == 2, "said once: \(allowed.output)")
    }
}
