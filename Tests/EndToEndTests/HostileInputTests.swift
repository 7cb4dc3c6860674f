import CVHostTestSupport
import Foundation
import Glibc
import Testing

/// What a camera on the network, or a name from outside, can send cvhost, and what it must not
/// do to it: a frame without end must not grow the process without bound or end the input.
@Suite("hostile inputs")
struct HostileInputTests {
    /// The clip as the hostile server reads it: H.264 Annex B, one slice a frame, 50 frames.
    static func annexB() throws -> String {
        try MediaFixtures.make("hostile.h264", ["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-frames:v", "50", "-c:v", "libx264",
                                                "-bf", "0", "-g", "25", "-x264-params", "slices=1", "-pix_fmt", "yuv420p", "-f", "h264"])
    }

    /// The peak resident memory of a process (VmHWM), in MB.
    static func peakMB(_ pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "").map { $0 / 1024 }
    }

    /// Images named as no one should name a file: `+` with a combining accent (one Character, yet a
    /// wildcard's byte to MQTT), a tab, a quote with a combining accent and a newline (a label
    /// value that would end early at /metrics, and a metric line of its own after it).
    static func hostileImages() throws -> [String] {
        let folder = TestFolders.make("hostile-names")
        let image = try MediaFixtures.make("hostile-name.png", ["-f", "lavfi", "-i", "color=c=gray:s=64x48", "-frames:v", "1"])
        return try ["plain.png", "a+\u{301}.png", "tab\tname.png", "q\"\u{301}\nfake_metric 7\n.png"].map { name in
            let path = folder + "/" + name
            if !FileManager.default.fileExists(atPath: path) { try FileManager.default.copyItem(atPath: image, toPath: path) }
            return path
        }
    }

    @Test("inputs named with `+` and a combining accent, a tab, a quote and a newline: every input's lines reach MQTT (none blocks the queue); /metrics stays valid (promtool) with no line injected")
    func hostileNames() throws {
        let broker = try MQTTBroker()
        let subscriber = try MQTTSubscriber(port: broker.port, topic: "cvhost/#")
        let port = freeLoopbackPort()
        let images = try Self.hostileImages()
        var scraped = ""
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--metrics-interval", "0", "--http", "127.0.0.1:\(port)",
                                      "--output", "mqtt://127.0.0.1:\(broker.port)/cvhost?drain=10", "--output", "-"] + images.flatMap { ["--input", $0] },
                                     timeout: 60, withStdin: false) { run in
            guard run.wait(until: { Self.count($0, "\"event\":\"session.stopped\"") == images.count }) else { return }
            scraped = (try? LiveViewTests.http(port, "/metrics").body) ?? ""
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        let got = subscriber.wait(timeout: 20) { m in m.filter { $0.payload.contains("\"event\":\"result\"") }.count >= images.count }
        #expect(got.filter { $0.payload.contains("\"event\":\"result\"") }.count == images.count, "\(got.map(\.topic))")
        // The topics: `+` and the tab are `_` (the accent stays: it is no wildcard).
        #expect(got.contains { $0.topic.contains("_a_\u{301}.png/") } && got.contains { $0.topic.contains("_tab_name.png/") }, "\(got.map(\.topic))")
        let file = TestFolders.make("metrics") + "/hostile.txt"
        try scraped.write(toFile: file, atomically: true, encoding: .utf8)
        let promtool = try Tool.run("/bin/sh", ["-c", "promtool check metrics < '\(file)'"])
        #expect(!scraped.isEmpty && promtool.status == 0, "promtool: \(promtool.output)")
        #expect(!scraped.split(separator: "\n").contains { $0.hasPrefix("fake_metric") })
        // stderr says the names without obeying them: no raw tab-less control bytes but the escapes cvhost writes.
        #expect(!r.stderr.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" && $0 != "\t" })
    }

    @Test("secrets never leave cvhost: a NATS token in the URL is shown nowhere (stdout, stderr, /metrics, /events); a plugin's worker does not inherit CVHOST_*_PASSWORD or _TOKEN")
    func secrets() throws {
        let server = try NATSServer()
        let port = freeLoopbackPort()
        let plugin = try PythonPluginTests.plugin("environment_probe", """
            import os
            import cvhost

            class Probe(cvhost.Plugin):
                api_version = (1, 0)
                name = "environment-probe"
                version = "1.0.0"
                description = "says which of cvhost's secrets its worker can read"
                pixel_formats = ("gray8",)

                def process(self, frame):
                    self.emit("env", {"secrets": sorted(k for k in os.environ if k.endswith(("_PASSWORD", "_TOKEN")))})
            """)
        var scraped = "", events = ""
        let r = try CVHostBinary.run(["run", "--plugin", plugin, "--input", "testsrc:64x48@30", "--max-frames", "5", "--metrics-interval", "1",
                                      "--output", "nats://s3cr3tTOKEN@127.0.0.1:\(server.port)/cvhost", "--output", "-", "--http", "127.0.0.1:\(port)"],
                                     timeout: 60, environment: PythonPluginTests.python.merging(["CVHOST_NATS_TOKEN": "tok-s3cr3t", "CVHOST_MQTT_PASSWORD": "s3cr3t-mqtt", "CVHOST_KAFKA_PASSWORD": "s3cr3t-k"]) { $1 },
                                     withStdin: false) { run in
            guard run.wait(until: { $0.contains("\"event\":\"session.stopped\"") }) else { return }
            scraped = (try? LiveViewTests.http(port, "/metrics").body) ?? ""
            events = (try? Tool.run("curl", ["-s", "--max-time", "2", "http://127.0.0.1:\(port)/events"]).output) ?? ""
            kill(run.pid, SIGTERM)
        }
        let probes = r.events("result").compactMap { ($0["data"] as? [String: Any])?["secrets"] as? [String] }
        #expect(probes.count == 5 && probes.allSatisfy(\.isEmpty), "\(probes) \(r.stderr)")
        for (name, text) in [("stdout", r.stdout), ("stderr", r.stderr), ("/metrics", scraped), ("/events", events)] {
            #expect(!text.contains("s3cr3t"), "\(name) shows a secret")
        }
        #expect(scraped.contains("output=\"nats://127.0.0.1:\(server.port)/cvhost\""), "\(scraped.prefix(300))")
    }

    @Test("what a plugin's worker writes (print, a traceback, a library's message) reaches stderr with its terminal escapes shown, not obeyed; every line of it")
    func workerEscapes() throws {
        let plugin = try PythonPluginTests.plugin("escapes", """
            import os, sys
            import cvhost

            class Escapes(cvhost.Plugin):
                api_version = (1, 0)
                name = "escapes"
                version = "1.0.0"
                description = "writes a terminal's escapes to stderr"
                pixel_formats = ("gray8",)

                def process(self, frame):
                    print("clear\\x1b[2J title\\x1b]0;owned\\x07 c1\\u009b31m tab\\tend", file=sys.stderr, flush=True)
                    os.write(2, b"raw \\x1b[5m from C\\n")
                    raise ValueError("bad \\x1b[31m label")
            """)
        let r = try CVHostBinary.run(["run", "--plugin", plugin, "--input", "testsrc:64x48", "--max-frames", "3", "--metrics-interval", "0"],
                                     timeout: 60, environment: PythonPluginTests.python)
        #expect(!r.stderr.unicodeScalars.contains { $0 == "\u{1b}" || $0 == "\u{07}" || $0 == "\u{9b}" }, "\(r.stderr)")
        #expect(r.stderr.contains("clear\\x1b[2J title\\x1b]0;owned\\x07 c1\\x9b31m tab\tend"), "\(r.stderr)")
        #expect(Self.count(r.stderr, "raw \\x1b[5m from C") >= 1 && r.stderr.contains("bad \\x1b[31m label"), "\(r.stderr)")
    }

    static func count(_ text: String, _ needle: String) -> Int { text.components(separatedBy: needle).count - 1 }

    /// The frames' media times of a run's results.
    static func times(_ r: CommandResult) -> [Double] { r.events("result").compactMap { $0["pts"] as? Double } }

    @Test("an RTSP camera that sends one frame without end (300 MB of packets of one timestamp): the frame is dropped as corrupt, memory stays bounded, every other frame arrives")
    func endlessFrame() throws {
        let args = ["run", "--plugin", "null:results=1,backpressure=block", "--metrics-interval", "0"]
        // The same camera without the endless frame: the frames to expect.
        let plain = try TestServer("hostile_rtsp_server.py", ["--clip", try Self.annexB(), "--good", "1000"])
        defer { plain.stop() }
        let expected = Self.times(try CVHostBinary.run(args + ["--input", "rtsp://127.0.0.1:\(plain.port)/cam"], timeout: 60))
        #expect(expected.count >= 45)
        let server = try TestServer("hostile_rtsp_server.py", ["--clip", try Self.annexB(), "--good", "10", "--endless", "300"])
        defer { server.stop() }
        let peak = Box<Int?>(nil)
        let r = try CVHostBinary.run(args + ["--input", "rtsp://127.0.0.1:\(server.port)/cam"], timeout: 120, withStdin: false) { running in
            // The peak is read while the run goes on (it is gone once the stream ends).
            _ = running.wait(timeout: 100) { out in
                peak.value = Self.peakMB(running.pid) ?? peak.value
                return out.contains("\"event\":\"session.stopped\"") || out.contains("\"event\":\"session.error\"")
            }
        }
        // Every frame of the clip (the endless one had a time of its own: those after it are 0.04 s later).
        let times = Self.times(r).map { $0 > 0.39 ? $0 - 0.04 : $0 }
        #expect(zip(times, expected).allSatisfy { abs($0 - $1) < 0.001 } && times.count == expected.count,
                "\(times.count) frames of \(expected.count): \(r.stderr.suffix(1500))")
        let lost = r.events("session.frames_lost").filter { $0["reason"] as? String == "corrupt" }
        #expect(lost.reduce(0) { $0 + ($1["count"] as? Int ?? 0) } == 1, "\(lost)")
        #expect(r.stderr.contains("was dropped as damaged; reading goes on at the next frame"), "\(r.stderr.suffix(1500))")
        // 300 MB were sent: the frame's packets are capped (32 MB), the reader's queue too (64 MB).
        let mb = try #require(peak.value)
        #expect(mb < 260, "peak RSS \(mb) MB")
        // The server's clip ends: on RTSP that is a lost connection, not a crash.
        #expect(r.exitCode == 2, "\(r.stderr.suffix(500))")
    }
}
