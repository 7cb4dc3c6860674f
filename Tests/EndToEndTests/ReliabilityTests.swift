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
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        holder.arguments = ["-c", "import os, sys, time\nfd = os.open(sys.argv[1], os.O_RDONLY)\ntime.sleep(300)", fifo]
        try holder.run()
        defer { holder.terminate(); holder.waitUntilExit() }
        // At 640x480@30 with 5 results a frame, the pipe (64 KiB) is full within two seconds.
        let run = "\"$0\" run --plugin null:results=5 --input testsrc:640x480@30 --metrics-interval 1 -q"
        let command = stop.hasPrefix("--")
            ? "exec timeout -s KILL 60 \(run) \(stop) > \(fifo)"
            : "\(run) > \(fifo) & pid=$!; sleep 4; kill -TERM $pid; (sleep 50; kill -KILL $pid) & guard=$!; wait $pid; rc=$?; kill $guard; exit $rc"
        let r = try Tool.run("bash", ["-c", command, CVHostBinary.path])
        // 137 would be the guard's SIGKILL (timeout's, or the watchdog's): the run froze.
        #expect(r.status == 4, "exit \(r.status): \(r.output)")
        #expect(r.output.contains("stdout's reader stopped reading: the run was stopped and"), "\(r.output)")
    }
}

extension ReliabilityTests {
    @Test("a stop while the run still waits (an input that does not open, a required broker that does not answer) ends it at once, exit 0",
          arguments: ["fifo", "broker"])
    func stopWhileStarting(waitingFor: String) throws {
        var arguments = ["run", "--plugin", "null", "--open-timeout", "60"]
        var listener: Process?
        if waitingFor == "fifo" {
            let fifo = Self.folder + "/in-\(UUID().uuidString.prefix(6)).fifo"
            #expect(mkfifo(fifo, 0o600) == 0)
            arguments += ["--input", fifo]  // no writer: opening it waits
        } else {
            // A server that takes the connection and never answers MQTT's CONNECT.
            let port = freeLoopbackPort()
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            p.arguments = ["-c", "import socket, sys, time\ns = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                           + "s.bind(('127.0.0.1', int(sys.argv[1])))\ns.listen()\nc = s.accept()\ntime.sleep(300)", String(port)]
            try p.run()
            listener = p
            usleep(300_000)
            arguments += ["--input", "testsrc", "--output", "mqtt://127.0.0.1:\(port)/t?required=true"]
        }
        defer { listener?.terminate(); listener?.waitUntilExit() }
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
