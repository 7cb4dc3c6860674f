import CVHostTestSupport
import Foundation
import Testing

/// Network streams from real servers on loopback (GStreamer's RTSP server), and their refusals.
@Suite("stream inputs")
struct StreamInputTests {
    static func codes(_ r: CommandResult) -> Set<String> {
        Set(r.events("result").compactMap { ($0["data"] as? [String: Any])?["text"] as? String })
    }

    static let demoCodes: Set<String> = ["https://example.com/cvhost?id=42", "4006381333931", "CVHOST-128"]

    @Test("RTSP over TCP, over UDP, and over UDP without being asked when the server refuses TCP")
    func rtspTransports() throws {
        let server = try TestServer("rtsp_server.py", ["--file", BarcodeFixtures.demoVideo])
        defer { server.stop() }
        let udpOnly = try TestServer("rtsp_server.py", ["--file", BarcodeFixtures.demoVideo, "--udp-only"])
        defer { udpOnly.stop() }
        let url = "rtsp://127.0.0.1:\(server.port)/codes"
        for extra in [[], ["--rtsp-transport", "udp"]] {
            let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", url, "--metrics-interval", "0"] + extra, timeout: 30)
            #expect(StreamInputTests.codes(r) == StreamInputTests.demoCodes, "\(extra): \(r.stderr)")
            let started = try #require(r.events("session.started").first?["device"] as? [String: Any])
            #expect(started["kind"] as? String == "stream" && started["live"] as? Bool == true)
            // The server's file ends: on RTSP that is a lost connection.
            #expect(r.exitCode == 2 && r.events("session.error").first?["code"] as? String == "disconnected")
            #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        }
        let fallback = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", "rtsp://127.0.0.1:\(udpOnly.port)/codes",
                                             "--metrics-interval", "0"], timeout: 30)
        #expect(StreamInputTests.codes(fallback) == StreamInputTests.demoCodes && fallback.stderr.contains("over UDP"), "\(fallback.stderr)")
    }

    @Test("an RTSP camera's H.264 frames go to the decoder whole as their last packet arrives, not when the next frame begins: every frame, undamaged, as from the file")
    func rtspFramesOnArrival() throws {
        let server = try TestServer("rtsp_server.py", ["--file", BarcodeFixtures.demoVideo])
        defer { server.stop() }
        // block: no frame of the live stream is dropped for a busy plugin (the machine may be loaded).
        let args = ["run", "--plugin", "null:results=1,backpressure=block", "--metrics-interval", "0"]
        let file = try CVHostBinary.run(args + ["--input", BarcodeFixtures.demoVideo])
        let r = try CVHostBinary.run(args + ["--input", "rtsp://127.0.0.1:\(server.port)/codes"], timeout: 30,
                                     environment: ["CVHOST_FRAME_TRACE": "1"])
        // The same 90 frames as the file gives (the first byte of each, in order), none damaged.
        func firstBytes(_ r: CommandResult) -> [Int] { r.events("result").compactMap { ($0["data"] as? [String: Any])?["first_byte"] as? Int } }
        #expect(firstBytes(file).count == 90 && firstBytes(r) == firstBytes(file), "\(firstBytes(r).count) frames: \(r.stderr.suffix(500))")
        #expect(r.events("session.frames_lost").isEmpty)
        // Each frame's stamps (CVHOST_FRAME_TRACE): its first and last packet's arrival, and when it went to the decoder.
        var marks: [Int64: [String: UInt64]] = [:]
        for line in r.stderr.split(separator: "\n") where line.hasPrefix("trace ") {
            let f = line.split(separator: " ")
            if f.count == 4, let pts = Int64(f[1]), let at = UInt64(f[3]) { marks[pts, default: [:]][String(f[2])] = at }
        }
        let frames = marks.keys.sorted().compactMap { marks[$0] }.filter { $0["to_decoder"] != nil && $0["first_packet"] != nil }
        #expect(frames.count == 90)
        // FFmpeg's parser could only hand a frame over once the next one's first packet was in; here
        // a frame goes as soon as it is whole. (How many make it before the next frame's packets is
        // the machine's pace: at least one must.)
        let early = zip(frames, frames.dropFirst()).filter { $0["to_decoder"]! < $1["first_packet"]! }.count
        #expect(early >= 1, "no frame reached the decoder before the next one's first packet")
        #expect(frames.allSatisfy { $0["last_packet"]! <= $0["to_decoder"]! && $0["first_packet"]! <= $0["last_packet"]! })
    }

    @Test("an RTSP camera's H.265 frames, joined as they arrive, and MPEG-4 Part 2 (FFmpeg's parser kept for it): every frame, the demo's codes", arguments: [
        ("h265", ["-c:v", "libx265", "-x265-params", "log-level=error"]), ("mpeg4", ["-c:v", "mpeg4", "-q:v", "2"]),
    ])
    func rtspOtherCodecs(_ codec: String, _ encoder: [String]) throws {
        let clip = try MediaFixtures.make("codes-\(codec).mp4", ["-i", BarcodeFixtures.demoVideo, "-an", "-g", "30"] + encoder)
        let server = try TestServer("rtsp_server.py", ["--file", clip, "--codec", codec])
        defer { server.stop() }
        let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--plugin", "null:results=1,backpressure=block", "--metrics-interval", "0",
                                      "--input", "rtsp://127.0.0.1:\(server.port)/codes"], timeout: 30, environment: ["CVHOST_FRAME_TRACE": "1"])
        #expect(StreamInputTests.codes(r) == StreamInputTests.demoCodes, "\(codec): \(r.stderr.suffix(500))")
        #expect(r.events("result", plugin: 1).count == 90 && r.events("session.frames_lost").isEmpty, "\(codec)")
        // H.265's frames are joined as they arrive (their packets stamped); MPEG-4's by FFmpeg's parser.
        #expect(r.stderr.contains(" first_packet ") == (codec == "h265"))
    }

    @Test("credentials are used and never shown; wrong ones, an unknown path, a refused port and a silent server are exit 3")
    func refusals() throws {
        let server = try TestServer("rtsp_server.py", ["--file", BarcodeFixtures.demoVideo, "--user", "cam", "--password", "s3cr3t-pw"])
        defer { server.stop() }
        let good = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", "rtsp://cam:s3cr3t-pw@127.0.0.1:\(server.port)/codes",
                                         "--metrics-interval", "0"], timeout: 30)
        #expect(StreamInputTests.codes(good) == StreamInputTests.demoCodes, "\(good.stderr)")
        #expect(!good.stdout.contains("s3cr3t-pw") && !good.stderr.contains("s3cr3t-pw"))
        #expect(good.stdout.contains("rtsp://cam:***@127.0.0.1:\(server.port)/codes"))

        // -v: FFmpeg's own log too.
        let wrong = try CVHostBinary.run(["run", "--plugin", "null", "--input", "rtsp://cam:not-it@127.0.0.1:\(server.port)/codes", "-v"],
                                         timeout: 30)
        #expect(wrong.exitCode == 3 && wrong.stderr.contains("401") && wrong.stderr.contains("cam:***@") && !wrong.stderr.contains("not-it"),
                "\(wrong.stderr)")
        let missing = try CVHostBinary.run(["run", "--plugin", "null", "--input", "rtsp://cam:s3cr3t-pw@127.0.0.1:\(server.port)/nothing"],
                                           timeout: 30)
        #expect(missing.exitCode == 3 && missing.stderr.contains("404") && !missing.stderr.contains("s3cr3t-pw"), "\(missing.stderr)")

        // A port nobody listens on, and a server that accepts and then says nothing.
        let listener = try TestServer("silent_server.py", [])
        defer { listener.stop() }
        let refusedPort = listener.port + 1 == server.port ? listener.port + 2 : listener.port + 1
        let refused = try CVHostBinary.run(["run", "--plugin", "null", "--input", "rtsp://127.0.0.1:\(refusedPort)/codes"], timeout: 30)
        #expect(refused.exitCode == 3 && refused.stderr.contains("Connection refused"), "\(refused.stderr)")
        // The open timeout bounds the wait: the message is its own, and a wait it did not bound
        // would have run into the 30 s limit (timedOut). A wall-clock bound would measure the load.
        let silent = try CVHostBinary.run(["run", "--plugin", "null", "--input", "rtsp://127.0.0.1:\(listener.port)/codes",
                                           "--open-timeout", "2"], timeout: 30)
        #expect(!silent.timedOut && silent.exitCode == 3 && silent.stderr.contains("no answer within 2 s"), "\(silent.stderr)")
        #expect(silent.stdout.isEmpty)
    }

    @Test("the server killed mid-run: with --reconnect interrupted (GET /inputs: reconnecting, why, the next try), then frames again (reconnects 1 in /inputs and /metrics); without, session.error and exit 2")
    func serverKilled() throws {
        let clip = try StreamFixtures.longCodes(times: 10)  // 30 s: longer than the run
        let first = try TestServer("rtsp_server.py", ["--file", clip])
        let port = first.port
        let restarted = Box<TestServer?>(nil)
        defer { first.stop(); restarted.value?.stop() }
        let url = "rtsp://127.0.0.1:\(port)/codes"
        let http = freeLoopbackPort()
        var away: [String: Any] = [:], back: [String: Any] = [:], metrics = ""
        func health() -> [String: Any] {
            let body = (try? LiveViewTests.http(http, "/inputs").body) ?? ""
            let answer = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
            return (((answer?["result"] as? [String: Any])?["inputs"] as? [[String: Any]])?.first?["health"] as? [String: Any]) ?? [:]
        }
        let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", url, "--reconnect", "--duration", "14",
                                      "--metrics-interval", "0", "--http", "127.0.0.1:\(http)", "--http-linger", "0"], timeout: 60,
                                     withStdin: false) { run in
            DispatchQueue.global().asyncAfter(deadline: .now() + 4) {
                first.stop()
                Thread.sleep(forTimeInterval: 2)
                restarted.value = try? TestServer("rtsp_server.py", ["--file", clip, "--port", "\(port)"])
            }
            if run.wait(until: { $0.contains("\"event\":\"session.interrupted\"") }) {
                usleep(700_000)  // a try or two made: the next one's time is known
                away = health()
            }
            if run.wait(until: { $0.contains("\"event\":\"session.interruption_ended\"") }) {
                _ = run.wait(until: { $0.components(separatedBy: "session.interruption_ended")[1].contains("\"event\":\"result\"") })
                back = health()
                metrics = (try? LiveViewTests.http(http, "/metrics").body) ?? ""
            }
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(away["state"] as? String == "reconnecting" && !(away["problem"] as? String ?? "").isEmpty, "\(away)")
        #expect((away["next_try"] as? Double ?? 0) > Date().timeIntervalSince1970 - 60, "\(away)")
        #expect(back["state"] as? String == "streaming" && back["reconnects"] as? Int == 1 && (back["last_frame_age"] as? Double ?? 99) < 5, "\(back)")
        #expect(LiveViewTests.sample(metrics, "cvhost_input_reconnects_total", [:]) == 1 && LiveViewTests.sample(metrics, "cvhost_input_up", [:]) == 1,
                "\(metrics.split(separator: "\n").filter { $0.hasPrefix("cvhost_input") })")
        #expect(restarted.value != nil, "the server started again on its port")
        let events = r.events.compactMap { $0["event"] as? String }
        let interrupted = try #require(events.firstIndex(of: "session.interrupted"), "\(r.stderr)")
        let ended = try #require(events.firstIndex(of: "session.interruption_ended"), "\(r.stderr)")
        #expect(interrupted < ended)
        #expect(events[ended...].contains("result"), "results after the stream came back")
        #expect(events.last == "session.stopped")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)

        // Without --reconnect: the lost connection ends the run.
        let again = try #require(restarted.value)
        let once = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", url, "--metrics-interval", "0"], timeout: 60) { _ in
            DispatchQueue.global().asyncAfter(deadline: .now() + 4) { again.stop() }
        }
        #expect(once.exitCode == 2 && once.events("session.error").first?["code"] as? String == "disconnected", "\(once.stderr)")
        #expect(once.events("metrics").last?["final"] as? Bool == true)
        #expect(once.events.last?["event"] as? String == "session.stopped")
    }

    @Test("a camera down when cvhost starts, with --reconnect: the other input runs from the start; the camera's input starts interrupted (its format null) and streams once its server is up; without --reconnect, exit 3")
    func downAtStart() throws {
        let clip = try StreamFixtures.longCodes(times: 10)
        let port = freeLoopbackPort()
        let url = "rtsp://127.0.0.1:\(port)/codes"
        let server = Box<TestServer?>(nil)
        defer { server.value?.stop() }
        let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", "base=testsrc:160x120@10", "--input", "cam=" + url, "--reconnect",
                                      "--metrics-interval", "0"], timeout: 90, withStdin: false) { run in
            defer { kill(run.pid, SIGTERM) }
            // The other input goes on while the camera is away.
            guard run.wait(until: { RunChangesTests.of(RunChangesTests.lines($0), "session.interrupted", source: "cam").count == 1 }) else { return }
            server.value = try? TestServer("rtsp_server.py", ["--file", clip, "--port", "\(port)"])
            _ = run.wait(timeout: 60) { RunChangesTests.of(RunChangesTests.lines($0), "result", source: "cam").count >= 3 }
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(server.value != nil, "the server started on its port")
        #expect(r.stderr.contains("Connection refused: --reconnect tries again while the run's other inputs go on"), "\(r.stderr)")
        let cam = r.events.filter { $0["source"] as? String == "cam" }.compactMap { $0["event"] as? String }
        #expect(Array(cam.prefix(2)) == ["session.started", "session.interrupted"], "\(cam.prefix(5))")
        let ended = try #require(cam.firstIndex(of: "session.interruption_ended"), "\(cam.prefix(8))")
        #expect(cam[ended...].contains("result"), "the camera's codes once it streams")
        let started = try #require(r.events.first { $0["event"] as? String == "session.started" && $0["source"] as? String == "cam" })
        #expect(started["format"] is NSNull, "\(started)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        // Without --reconnect a camera that cannot be reached is exit 3, as before.
        let refused = try CVHostBinary.run(["run", "--plugin", "null", "--input", "rtsp://127.0.0.1:\(freeLoopbackPort())/x", "--max-frames", "1"], timeout: 60)
        #expect(refused.exitCode == 3 && refused.stderr.contains("Connection refused"), "\(refused.stderr)")
    }

    @Test("a stop is a stop: two RTSP cameras with --reconnect stopped by SIGTERM, five times, never say session.interrupted or an error")
    func cleanStops() throws {
        let server = try TestServer("rtsp_server.py", ["--file", try StreamFixtures.longCodes(times: 10)])
        defer { server.stop() }
        let url = "rtsp://127.0.0.1:\(server.port)/codes"
        for attempt in 1...5 {
            let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "a=" + url, "--input", "b=" + url, "--reconnect",
                                          "--metrics-interval", "0"], timeout: 60, withStdin: false) { run in
                defer { kill(run.pid, SIGTERM) }
                _ = run.wait(until: { out in ["a", "b"].allSatisfy { !RunChangesTests.of(RunChangesTests.lines(out), "result", source: $0).isEmpty } })
            }
            #expect(r.exitCode == 0, "stop \(attempt): \(r.stderr)")
            let events = r.events.compactMap { $0["event"] as? String }
            #expect(!events.contains("session.interrupted") && !events.contains("session.error"), "stop \(attempt): \(events.filter { $0.hasPrefix("session") })")
            #expect(r.events("session.stopped").map { $0["reason"] as? String } == ["signal", "signal"], "stop \(attempt)")
            #expect(!r.stderr.contains("reconnecting"), "stop \(attempt): \(r.stderr)")
        }
    }

    @Test("a stop is a stop for an HTTP MJPEG camera and an MPEG-TS stream over UDP too: stopped by SIGTERM while frames flow, five times each, with --reconnect: never session.interrupted or an error")
    func cleanStopsHTTPAndUDP() throws {
        let root = MediaFixtures.folder + "/http-stops"
        try FileManager.default.createDirectory(atPath: root + "/frames", withIntermediateDirectories: true)
        try Tool.check("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", BarcodeFixtures.demoVideo, "-q:v", "3", root + "/frames/%03d.jpg"])
        let server = try TestServer("http_server.py", ["--root", root, "--frames", root + "/frames"])
        defer { server.stop() }
        let udp = freeLoopbackPort(udp: true)
        // A sender that goes on for the whole test (the demo again and again, at its pace).
        let sender = try Tool.start("ffmpeg", ["-nostdin", "-v", "error", "-re", "-stream_loop", "-1", "-i", BarcodeFixtures.demoVideo,
                                               "-c", "copy", "-f", "mpegts", "udp://127.0.0.1:\(udp)?pkt_size=1316"])
        defer { sender.terminate(); sender.waitUntilExit() }
        for (kind, url) in [("http", "http://127.0.0.1:\(server.port)/video.mjpg"), ("udp", "udp://127.0.0.1:\(udp)")] {
            for attempt in 1...5 {
                let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "cam=" + url, "--reconnect", "--metrics-interval", "0"],
                                             timeout: 60, withStdin: false) { run in
                    defer { kill(run.pid, SIGTERM) }
                    _ = run.wait(until: { !RunChangesTests.of(RunChangesTests.lines($0), "result", source: "cam").isEmpty })
                }
                let events = r.events.compactMap { $0["event"] as? String }
                #expect(r.exitCode == 0 && events.contains("result"), "\(kind) stop \(attempt): \(r.stderr)")
                #expect(!events.contains("session.interrupted") && !events.contains("session.error"),
                        "\(kind) stop \(attempt): \(events.filter { $0.hasPrefix("session") })")
                #expect(r.events("session.stopped").map { $0["reason"] as? String } == ["signal"], "\(kind) stop \(attempt)")
            }
        }
    }

    @Test("HTTP: an MJPEG multipart stream as IP cameras serve it, and an HLS playlist")
    func http() throws {
        let root = MediaFixtures.folder + "/http"
        try FileManager.default.createDirectory(atPath: root + "/frames", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/hls", withIntermediateDirectories: true)
        try Tool.check("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", BarcodeFixtures.demoVideo, "-q:v", "3", root + "/frames/%03d.jpg"])
        try Tool.check("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", BarcodeFixtures.demoVideo, "-c", "copy", "-f", "hls", "-hls_time", "1",
                                  "-hls_list_size", "0", "-hls_playlist_type", "vod", root + "/hls/index.m3u8"])
        let server = try TestServer("http_server.py", ["--root", root, "--frames", root + "/frames"])
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        // MJPEG: every frame read; the camera closing the connection is a lost connection.
        let mjpeg = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", base + "/video.mjpg", "--backpressure", "block",
                                          "--metrics-interval", "0"], timeout: 60)
        #expect(StreamInputTests.codes(mjpeg) == StreamInputTests.demoCodes, "\(mjpeg.stderr)")
        #expect(mjpeg.events("session.stopped").first?["frames"] as? Int == 90)
        #expect(mjpeg.exitCode == 2 && mjpeg.events("session.error").first?["code"] as? String == "disconnected")
        // HLS: a playlist that ends is the end of the input.
        let hls = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", base + "/hls/index.m3u8", "--backpressure", "block",
                                        "--metrics-interval", "0"], timeout: 60)
        #expect(hls.exitCode == 0 && StreamInputTests.codes(hls) == StreamInputTests.demoCodes, "\(hls.stderr)")
        #expect(hls.events("session.stopped").first?["reason"] as? String == "end_of_input")
        // A pre-signed URL: its credentials are used, never written (every query value is masked).
        let secrets = ["AKIAEXAMPLE", "FwoGZXIvYXdzEXAMPLE", "9f2cEXAMPLE"]
        let signed = try CVHostBinary.run(["run", "--plugin", "barcode", "--input",
                                           base + "/hls/index.m3u8?X-Amz-Credential=\(secrets[0])%2F20261126&X-Amz-Security-Token=\(secrets[1])"
                                               + "&X-Amz-Signature=\(secrets[2])", "--backpressure", "block", "--metrics-interval", "0"], timeout: 60)
        #expect(signed.exitCode == 0 && StreamInputTests.codes(signed) == StreamInputTests.demoCodes, "\(signed.stderr)")
        #expect(!secrets.contains { signed.stdout.contains($0) || signed.stderr.contains($0) }, "\(signed.stderr)")
        #expect(signed.events("result").first?["source"] as? String
                == base + "/hls/index.m3u8?X-Amz-Credential=***&X-Amz-Security-Token=***&X-Amz-Signature=***")
        #expect(signed.stderr.contains("--input NAME=URL gives it a name"), "\(signed.stderr)")
        let missing = try CVHostBinary.run(["run", "--plugin", "null", "--input", base + "/nothing.m3u8"], timeout: 30)
        #expect(missing.exitCode == 3 && missing.stderr.contains("404"))
    }

    @Test("SRT and RTMP from FFmpeg listening, and MPEG-TS over UDP from FFmpeg sending")
    func srtRtmpUdp() throws {
        let demo = BarcodeFixtures.demoVideo
        for (scheme, format, query) in [("srt", "mpegts", "?mode=listener"), ("rtmp", "flv", "")] {
            let port = freeLoopbackPort(udp: scheme == "srt")
            let path = scheme == "rtmp" ? "/live/cam" : ""
            let sender = try Tool.start("ffmpeg", ["-nostdin", "-v", "error", "-re", "-i", demo, "-c", "copy", "-f", format]
                                        + (scheme == "rtmp" ? ["-listen", "1"] : []) + ["\(scheme)://127.0.0.1:\(port)\(path)\(query)"])
            defer { sender.terminate(); sender.waitUntilExit() }
            Thread.sleep(forTimeInterval: 1)
            let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", "\(scheme)://127.0.0.1:\(port)\(path)",
                                          "--backpressure", "block", "--metrics-interval", "0"], timeout: 60)
            #expect(StreamInputTests.codes(r) == StreamInputTests.demoCodes, "\(scheme): \(r.stderr)")
            // The sender finished: on these protocols that is a lost connection.
            #expect(r.exitCode == 2 && r.events("session.error").first?["code"] as? String == "disconnected", "\(scheme): \(r.stderr)")
        }
        // UDP has no connection: when the sender stops, the stream is interrupted, not lost.
        let port = freeLoopbackPort(udp: true)
        let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", "udp://127.0.0.1:\(port)", "--duration", "8",
                                      "--metrics-interval", "0"], timeout: 60) { _ in
            DispatchQueue.global().asyncAfter(deadline: .now() + 1.5) {
                _ = try? Tool.run("ffmpeg", ["-nostdin", "-v", "error", "-re", "-i", demo, "-c", "copy", "-f", "mpegts",
                                             "udp://127.0.0.1:\(port)?pkt_size=1316"])
            }
        }
        #expect(r.exitCode == 0 && StreamInputTests.codes(r) == StreamInputTests.demoCodes, "udp: \(r.stderr)")
        #expect(r.events("session.interrupted").count == 1)
    }

    @Test("a stream on stdin and through a named pipe; a pipe nobody writes to is exit 3 within the open timeout")
    func pipes() throws {
        let ts = try MediaFixtures.make("codes.ts", ["-i", BarcodeFixtures.demoVideo, "-c", "copy", "-f", "mpegts"])
        let cvhost = "'\(CVHostBinary.path)' run --plugin barcode --metrics-interval 0 -q"
        let piped = try Tool.run("/bin/bash", ["-c", "\(cvhost) --input - < '\(ts)'"])
        #expect(piped.status == 0 && piped.output.contains("\"CVHOST-128\""), "\(piped.output.suffix(500))")
        #expect(piped.output.contains("\"frames\":90,"), "every frame read, none dropped")

        let fifo = MediaFixtures.folder + "/stream.fifo"
        unlink(fifo)
        #expect(mkfifo(fifo, 0o600) == 0)
        // An open that the timeout did not bound blocks for ever: timedOut at 30 s.
        let silent = try CVHostBinary.run(["run", "--plugin", "null", "--input", fifo, "--open-timeout", "2"], timeout: 30)
        #expect(!silent.timedOut && silent.exitCode == 3 && silent.stderr.contains("no data on \(fifo) within 2 s"), "\(silent.stderr)")
        let fed = try Tool.run("/bin/bash", ["-c", "(sleep 1; cat '\(ts)' > '\(fifo)') & \(cvhost) --input '\(fifo)'"])
        #expect(fed.status == 0 && fed.output.contains("\"processed\":90"), "\(fed.output.suffix(500))")
    }

    @Test("a pipe that pauses past the stall time is interrupted, then read on to its end: every frame, exit 0")
    func pipePause() throws {
        let ts = try MediaFixtures.make("codes.ts", ["-i", BarcodeFixtures.demoVideo, "-c", "copy", "-f", "mpegts"])
        let half = (try FileManager.default.attributesOfItem(atPath: ts)[.size] as? Int ?? 0) / 188 / 2 * 188
        // Half the stream, silence until cvhost is interrupted (the stall time is 2 s), the rest, silence again, then the end.
        // (Silence as cvhost sees it starts when it has read what the pipe held: on a loaded
        // machine, a second or two later than the sender's. A loaded machine may also stall the
        // sender past 2 s elsewhere: more interruptions than the two pauses are real ones.)
        let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--metrics-interval", "0", "--input", "-", "-q"], timeout: 60,
                                     withStdin: true) { running in
            // Each pause lasts until cvhost says it is interrupted (the stall time, 2 s, after it read what the pipe held).
            let data = FileManager.default.contents(atPath: ts) ?? Data()
            running.send(bytes: data.prefix(half))
            _ = running.wait { $0.contains("\"event\":\"session.interrupted\"") }
            running.send(bytes: data.dropFirst(half))
            _ = running.wait { $0.components(separatedBy: "\"event\":\"session.interrupted\"").count > 2 }
            running.closeStdin()
        }
        #expect(!r.timedOut && r.exitCode == 0, "\(r.stderr)")
        #expect(r.events("session.interrupted").count >= 2 && r.events("session.interruption_ended").count >= 1)
        let stopped = r.events("session.stopped").first
        #expect(stopped?["reason"] as? String == "end_of_input" && stopped?["frames"] as? Int == 90, "\(stopped ?? [:])")
    }

    @Test("stream options are checked")
    func optionRefusals() throws {
        let transport = try CVHostBinary.run(["run", "--plugin", "null", "--input", "rtsp://127.0.0.1:1/x", "--rtsp-transport", "sctp"])
        #expect(transport.exitCode == 64 && transport.stderr.contains("--rtsp-transport takes tcp or udp"))
        let reconnectFile = try CVHostBinary.run(["run", "--plugin", "null", "--input", BarcodeFixtures.demoVideo, "--reconnect"])
        #expect(reconnectFile.exitCode == 64 && reconnectFile.stderr.contains("--reconnect applies to cameras and network streams"))
        let reconnectStdin = try CVHostBinary.run(["run", "--plugin", "null", "--input", "-", "--reconnect"])
        #expect(reconnectStdin.exitCode == 64 && reconnectStdin.stderr.contains("not to -"))
        // Passwords that hold '/', '?', '#', an SRT passphrase: never in a message.
        for url in ["rtsp://cam:Zq/9Secret@127.0.0.1:1/s", "rtsp://cam:Zq?9#Secret@127.0.0.1:1/s", "srt://127.0.0.1:1?passphrase=Zq9SecretSecret"] {
            let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", url, "--open-timeout", "1"], timeout: 30)
            #expect(r.exitCode == 3 && !r.stderr.contains("Secret") && r.stderr.contains("***"), "\(url): \(r.stderr)")
        }
        let scheme = try CVHostBinary.run(["run", "--plugin", "null", "--input", "ftp://user:pw@127.0.0.1/x"])
        #expect(scheme.exitCode == 3 && scheme.stderr.contains("rtsp://") && scheme.stderr.contains("user:***@") && !scheme.stderr.contains(":pw@"))
    }
}
