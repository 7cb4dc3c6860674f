import CVHostTestSupport
import Foundation
import Testing

/// `--http`: Prometheus metrics checked by promtool, the page rendered by a real browser
/// (headless Chromium), many MJPEG viewers and one that stops reading, the token, commands on
/// stdin and POST /controls. (Camera controls while running: CameraTests, in the vivid VM.)
@Suite("Live view and control over HTTP")
struct LiveViewTests {
    /// A request with curl. - Returns: the status and the body.
    static func http(_ port: Int, _ path: String, method: String = "GET", body: String? = nil,
                     headers: [String] = []) throws -> (status: Int, body: String) {
        let file = TestFolders.make("http") + "/body"
        var args = ["-s", "-o", file, "-w", "%{http_code}", "-X", method, "--max-time", "20"]
        for h in headers { args += ["-H", h] }
        if let body { args += ["--data-binary", body] }
        let r = try Tool.run("curl", args + ["http://127.0.0.1:\(port)\(path)"])
        return (Int(r.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0,
                (try? String(contentsOfFile: file, encoding: .utf8)) ?? "")
    }

    /// A sample's value in a Prometheus exposition: the line that starts with `name{` and has every label.
    static func sample(_ text: String, _ name: String, _ labels: [String: String]) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + "{") || line.hasPrefix(name + " ") {
            let l = String(line)
            if labels.allSatisfy({ l.contains("\($0.key)=\"\($0.value)\"") }), let v = l.split(separator: " ").last {
                return Double(v)
            }
        }
        return nil
    }

    static let demo = BarcodeFixtures.demoVideo

    /// What a screenshot of the page lacks: the picture, or the outline at one of `corners`
    /// (the demo's frame pixels), or an outline where there is no code. Empty when all is drawn.
    static func undrawn(_ corners: [[Double]], in shot: String) -> [String] {
        guard let pixels = try? Screenshot(shot, width: 1280, height: 800) else { return ["no screenshot"] }
        guard let box = pixels.pictureBox() else { return ["no picture"] }
        // The demo is 960x540: where a frame's pixel is on the screen.
        let scale = Double(box.width) / 960
        guard abs(Double(box.height) - 540 * scale) < 4 else { return ["the picture is \(box.width)x\(box.height)"] }
        func onScreen(_ p: [Double]) -> (Int, Int) { (box.x + Int(p[0] * scale), box.y + Int(p[1] * scale)) }
        var missing = corners.compactMap { c -> String? in
            let (x, y) = onScreen(c)
            return pixels.hasOutline(nearX: x, y: y) ? nil : "no outline at \(c) (\(x),\(y))"
        }
        // And none where there is no code (the picture's empty lower left).
        let (x, y) = onScreen([100, 450])
        if pixels.hasOutline(nearX: x, y: y) { missing.append("an outline where there is no code") }
        return missing
    }

    @Test("/metrics passes promtool check metrics, and its counters equal the run's final metrics line; /healthz says 503 once the input ended")
    func prometheusMetrics() throws {
        let port = freeLoopbackPort()
        var scraped = ""
        var health = (status: 0, body: "")
        let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--plugin", "null:results=2", "--input", Self.demo,
                                      "--http", "127.0.0.1:\(port)", "--metrics-interval", "0"], timeout: 90, withStdin: false) { run in
            // The input ends; the server stays up (--http-linger's default) with the final counts.
            guard run.wait(until: { $0.contains("\"event\":\"session.stopped\"") }) else { return }
            scraped = (try? Self.http(port, "/metrics").body) ?? ""
            health = (try? Self.http(port, "/healthz")) ?? (0, "")
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        let file = TestFolders.make("metrics") + "/metrics.txt"
        try scraped.write(toFile: file, atomically: true, encoding: .utf8)
        let promtool = try Tool.run("/bin/sh", ["-c", "promtool check metrics < '\(file)'"])
        #expect(promtool.status == 0, "promtool: \(promtool.output)")
        #expect(health.status == 503 && health.body.contains("\"stopped\""), "\(health)")
        // It names the input that is not healthy, and why.
        #expect(health.body.contains("\"unhealthy\":[\"\(Self.demo) (stopped: end_of_input)\"]"), "\(health)")

        let source = Self.demo
        let stopped = try #require(r.events("session.stopped").first)
        #expect(Self.sample(scraped, "cvhost_source_frames_captured_total", ["source": source]) == Double(stopped["frames"] as? Int ?? -1))
        for final in r.events("metrics") where final["final"] as? Bool == true {
            let labels = ["source": source, "plugin": final["plugin"] as! String, "plugin_index": "\(final["plugin_index"] as! Int)"]
            let frames = try #require(final["frames"] as? [String: Any])
            for key in ["offered", "delivered", "processed", "failed"] {
                #expect(Self.sample(scraped, "cvhost_plugin_frames_\(key)_total", labels) == Double(frames[key] as! Int), "\(key)")
            }
            for (reason, n) in try #require(frames["dropped"] as? [String: Int]) {
                #expect(Self.sample(scraped, "cvhost_plugin_frames_dropped_total", labels.merging(["reason": reason]) { a, _ in a }) == Double(n))
            }
            #expect(Self.sample(scraped, "cvhost_plugin_results_total", labels) == Double(final["results"] as! Int))
            #expect(Self.sample(scraped, "cvhost_plugin_invalid_results_total", labels) == Double(final["invalid_results"] as! Int))
            #expect(Self.sample(scraped, "cvhost_plugin_latency_seconds_count", labels) == Double(frames["processed"] as! Int + (frames["failed"] as! Int)))
        }
        #expect((Self.sample(scraped, "process_resident_memory_bytes", [:]) ?? 0) > 1_000_000)
        #expect(Self.sample(scraped, "cvhost_source_state", ["source": source, "state": "stopped"]) == 1)
    }

    @Test("headless Chromium shows the page of a demo run: the picture, with an outline drawn at each code's corners; with a token too (the page at /?token=T loads its script)",
          arguments: [false, true])
    func browserDrawsCodes(withToken: Bool) throws {
        let port = freeLoopbackPort()
        let folder = TestFolders.make("browser")
        let shot = folder + "/live-view.png"
        var corners: [[Double]] = []
        var missing: [String] = ["no screenshot"]
        let secret = "page-\(UUID().uuidString.prefix(8))"
        var tokenArguments: [String] = []
        if withToken {
            try secret.write(toFile: folder + "/token", atomically: true, encoding: .utf8)
            tokenArguments = ["--http-token-file", folder + "/token"]
        }
        let page = "http://127.0.0.1:\(port)/" + (withToken ? "?token=\(secret)" : "")
        let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", Self.demo, "--http", "127.0.0.1:\(port)",
                                      "--metrics-interval", "0"] + tokenArguments, timeout: 120, withStdin: false) { run in
            guard run.wait(until: { $0.contains("\"event\":\"session.stopped\"") }) else { return }
            // The last frame's codes: the page opened after the end shows that picture and its results (the replay of /events).
            let results = run.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .filter { $0["event"] as? String == "result" }
            let lastSeq = results.compactMap { $0["seq"] as? Int }.max()
            corners = results.filter { $0["seq"] as? Int == lastSeq }
                .flatMap { (($0["data"] as? [String: Any])?["corners"] as? [[Double]]) ?? [] }
            // A browser renders when it renders (later on a busy machine): the screenshot is taken once
            // the page has drawn the codes over a picture it loaded; a few tries.
            let drawn = "document.querySelectorAll('#overlay polygon').length >= 3 "
                + "&& (p => p.complete && p.naturalWidth > 0)(document.getElementById('picture'))"
            for _ in 0..<3 {
                _ = PageProbe.steps(page, [["wait": drawn], ["screenshot": shot]], timeout: 60, as: Bool.self)
                missing = LiveViewTests.undrawn(corners, in: shot)
                if missing.isEmpty { break }
            }
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(corners.count == 12, "the demo's last frame has three codes")
        #expect(missing.isEmpty, "\(missing)")
        guard !withToken else { return }
        // Kept as the test's artifact (the README shows one such screenshot: docs/live-view.png).
        let artifacts = PluginFixtures.packageRoot + "/.build/test-artifacts"
        try? FileManager.default.createDirectory(atPath: artifacts, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: artifacts + "/live-view.png")
        try? FileManager.default.copyItem(atPath: shot, toPath: artifacts + "/live-view.png")
        print("live view screenshot: \(artifacts)/live-view.png")
    }

    @Test("a token: required beyond loopback (exit 64 without one); the routes with data want it, else 401; the page's files and /healthz do not; it is never printed")
    func token() throws {
        let port = freeLoopbackPort()
        let refused = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "--http", "0.0.0.0:\(port)"], timeout: 30)
        #expect(refused.exitCode == 64 && refused.stderr.contains("--http-token-file"), "\(refused.stderr)")

        let secret = "s3cret-\(UUID().uuidString.prefix(8))"
        let tokenFile = TestFolders.make("token") + "/token"
        try (secret + "\n").write(toFile: tokenFile, atomically: true, encoding: .utf8)
        var answers: [String: Int] = [:]
        var pageWithoutToken = ""
        let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc:160x120@10", "--http", "0.0.0.0:\(port)",
                                      "--http-token-file", tokenFile, "--metrics-interval", "0"], timeout: 60, withStdin: false) { run in
            guard run.waitForStderr("live view at") else { return }
            _ = run.wait(until: { $0.contains("session.started") })
            // The page opened without its token says so, rather than "reconnecting…" over a broken picture.
            pageWithoutToken = (try? Tool.run("chromium", ["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000", "--timeout=10000",
                                                          "--dump-dom", "http://127.0.0.1:\(port)/"]).output) ?? ""
            answers["none"] = try? Self.http(port, "/metrics").status
            answers["wrong"] = try? Self.http(port, "/metrics", headers: ["Authorization: Bearer nope"]).status
            answers["header"] = try? Self.http(port, "/metrics", headers: ["Authorization: Bearer \(secret)"]).status
            answers["query"] = try? Self.http(port, "/controls?token=\(secret)").status
            answers["page"] = try? Self.http(port, "/").status
            answers["healthz"] = try? Self.http(port, "/healthz").status
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(answers == ["none": 401, "wrong": 401, "header": 200, "query": 200, "page": 200, "healthz": 200])
        #expect(!r.stdout.contains(secret) && !r.stderr.contains(secret))
        #expect(pageWithoutToken.contains("this server wants its token"), "\(pageWithoutToken.suffix(600))")
        // Listening on every address: addresses a browser can open, and how to pass the token.
        let said = try #require(r.stderr.split(separator: "\n").first { $0.contains("live view at") })
        #expect(!said.contains("0.0.0.0") && said.contains("http://127.0.0.1:\(port)/") && said.contains("?token=TOKEN"), "\(said)")

        // The port taken: exit 6, naming it.
        let listener = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc:160x120@10", "--http", "127.0.0.1:\(port)",
                                             "--duration", "20"], timeout: 40, withStdin: false) { run in
            guard run.waitForStderr("live view at") else { return }
            let second = try? CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "--http", "127.0.0.1:\(port)"], timeout: 20)
            #expect(second?.exitCode == 6 && second?.stderr.contains("127.0.0.1:\(port) for --http: Address already in use") == true,
                    "\(second?.stderr ?? "")")
            kill(run.pid, SIGTERM)
        }
        #expect(listener.exitCode == 0)
    }

    @Test("commands on stdin and POST /controls: answered by command.result, every change a control.changed line; bad ones refused clearly")
    func commands() throws {
        let port = freeLoopbackPort()
        var post = (status: 0, body: "")
        var controls = ""
        let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc:160x120@20", "--http", "127.0.0.1:\(port)",
                                      "--metrics-interval", "0"], timeout: 60, withStdin: true) { run in
            guard run.wait(until: { $0.contains("session.started") }) else { return }
            run.send(#"{"command":"set_plugin","plugin":"null","enabled":false,"id":1}"#)
            run.send(#"{"command":"set_control","name":"brightness","value":1,"id":"cam"}"#)
            run.send("not json")
            run.send(#"{"command":"frobnicate"}"#)
            run.send(#"{"command":"set_plugin","plugin":"nope","enabled":true}"#)
            run.send(#"{"command":"set_plugin","plugin":"null","enabled":"yes"}"#)
            run.send(#"{"command":"get_controls","id":"q"}"#)
            _ = run.wait(until: { $0.components(separatedBy: "command.result").count > 7 })
            post = (try? Self.http(port, "/controls", method: "POST", body: #"{"plugin":"null","max_fps":2}"#,
                                   headers: ["Content-Type: application/json"])) ?? (0, "")
            controls = (try? Self.http(port, "/controls").body) ?? ""
            run.send(#"{"command":"stop","id":"end"}"#)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        let answers = r.events("command.result")
        #expect(answers.count == 8, "\(answers)")
        func answer(_ i: Int) -> (ok: Bool, error: String) {
            (answers[i]["ok"] as? Bool ?? false, answers[i]["error"] as? String ?? "")
        }
        #expect(answer(0).ok && answers[0]["id"] as? Int == 1)
        #expect(!answer(1).ok && answer(1).error.contains("no input is a camera") && answers[1]["id"] as? String == "cam")
        #expect(!answer(2).ok && answer(2).error.contains("one JSON object"))
        #expect(!answer(3).ok && answer(3).error.contains("unknown command \"frobnicate\""))
        #expect(!answer(4).ok && answer(4).error.contains("no plugin nope"))
        #expect(!answer(5).ok && answer(5).error.contains("\"enabled\" is true or false"))
        #expect(answer(6).ok && (answers[6]["result"] as? [String: Any])?["sources"] != nil)
        #expect(answer(7).ok && answers[7]["command"] as? String == "stop")
        #expect(post.status == 200 && post.body.contains("\"ok\":true"), "\(post)")
        #expect(controls.contains("\"enabled\":false") && controls.contains("\"max_fps\":2"), "\(controls)")
        let changes = r.events("control.changed")
        #expect(changes.map { $0["name"] as? String ?? "" } == ["enabled", "max_fps"])
        #expect(changes.map { $0["by"] as? String ?? "" } == ["stdin", "http"])
        #expect(changes.first?["applied"] as? String == "false" && changes.last?["applied"] as? String == "2")
        #expect(r.events("session.stopped").first?["reason"] as? String == "requested")
    }

    @Test("a web page cannot reach the camera: a rebound name's Host is 421 and a cross-site text/plain POST is 403, each one line and counted in /metrics; the server's own requests work")
    func webPages() throws {
        let port = freeLoopbackPort()
        var answers: [String: (status: Int, body: String)] = [:]
        var metrics = ""
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "testsrc:160x120@10", "--http", "127.0.0.1:\(port)",
                                      "--metrics-interval", "0"], timeout: 60, withStdin: false) { run in
            guard run.wait(until: { $0.contains("session.started") }) else { return }
            let change = #"{"plugin":"null","enabled":false}"#
            answers["rebound"] = try? Self.http(port, "/snapshot.jpg", headers: ["Host: evil.example:\(port)"])
            answers["rebound events"] = try? Self.http(port, "/controls", headers: ["Host: evil.example:\(port)"])
            answers["cross-site"] = try? Self.http(port, "/controls", method: "POST", body: change,
                                                   headers: ["Origin: http://evil.example", "Content-Type: text/plain"])
            answers["stop"] = try? Self.http(port, "/controls", method: "POST", body: #"{"command":"stop"}"#,
                                             headers: ["Origin: http://evil.example", "Content-Type: text/plain"])
            answers["plain"] = try? Self.http(port, "/controls", method: "POST", body: change, headers: ["Content-Type: text/plain"])
            metrics = (try? Self.http(port, "/metrics").body) ?? ""
            answers["own"] = try? Self.http(port, "/controls", method: "POST", body: change,
                                            headers: ["Origin: http://127.0.0.1:\(port)", "Content-Type: application/json"])
            answers["page"] = try? Self.http(port, "/", headers: ["Host: localhost:\(port)"])
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(answers["rebound"]?.status == 421 && answers["rebound events"]?.status == 421, "\(answers)")
        #expect(answers["rebound"]?.body.contains("--http-allow-host evil.example") == true)
        #expect(answers["cross-site"]?.status == 403 && answers["stop"]?.status == 403, "\(answers)")
        #expect(answers["plain"]?.status == 415, "\(answers)")
        for (_, a) in answers where a.status != 200 { #expect(a.body.split(separator: "\n").count == 1, "\(a.body)") }
        #expect(answers["own"]?.status == 200 && answers["page"]?.status == 200, "\(answers)")
        #expect(Self.sample(metrics, "cvhost_http_requests_refused_total", ["reason": "host"]) == 2)
        #expect(Self.sample(metrics, "cvhost_http_requests_refused_total", ["reason": "origin"]) == 2)
        #expect(Self.sample(metrics, "cvhost_http_requests_refused_total", ["reason": "content_type"]) == 1)
        // Only the own page's change was applied; the run was stopped by the signal, not by the page.
        #expect(r.events("control.changed").count == 1)
        #expect(r.events("session.stopped").first?["reason"] as? String == "signal")
    }

    @Test("/metrics and /healthz answer while stdout's reader has stopped reading (no route waits on a blocked write)")
    func metricsWhileStdoutIsStuck() throws {
        let port = freeLoopbackPort()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CVHostBinary.path)
        p.arguments = ["run", "--plugin", "null:results=5", "--input", "testsrc:320x240@30", "--http", "127.0.0.1:\(port)",
                       "--metrics-interval", "0.2", "--no-stdin-commands"]
        let neverRead = Pipe()
        p.standardOutput = neverRead
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        defer {
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
        }
        // The pipe fills (64 KiB of lines): stdout's line count stops growing between two scrapes.
        func delivered() -> Double? {
            (try? Self.http(port, "/metrics")).flatMap { Self.sample($0.body, "cvhost_output_lines_delivered_total", ["output": "stdout"]) }
        }
        // Listening first: a loaded machine takes a while to start (a scrape before it is no answer, not the defect).
        for _ in 0..<240 where ((try? Self.http(port, "/healthz"))?.status ?? 0) == 0 { usleep(500_000) }
        var last: Double? = nil
        var stuck = false
        for _ in 0..<60 {
            usleep(500_000)
            // A scrape that does not answer (20 s) is the defect itself: stop there.
            guard let now = delivered() else { break }
            if now > 0, now == last {
                stuck = true
                break
            }
            last = now
        }
        #expect(stuck, "stdout's lines never stopped, or /metrics stopped answering: \(last ?? -1) lines")
        let metrics = try Self.http(port, "/metrics")
        #expect(metrics.status == 200 && metrics.body.contains("cvhost_plugin_frames_processed_total"))
        let health = try Self.http(port, "/healthz")
        #expect(health.status == 200, "\(health)")
    }

    @Test("a name that resolves beyond loopback needs a token, whatever it looks like (127.cam.lan resolving to 0.0.0.0): exit 64 naming the address")
    func nameBeyondLoopback() throws {
        let folder = TestFolders.make("hosts")
        try "0.0.0.0 127.cam.lan\n127.0.0.1 localhost\n".write(toFile: folder + "/hosts", atomically: true, encoding: .utf8)
        try "t0ken".write(toFile: folder + "/token", atomically: true, encoding: .utf8)
        let port = freeLoopbackPort()
        // A mount namespace of its own, where /etc/hosts says so (as a LAN's DNS may).
        func run(_ extra: [String]) throws -> (status: Int32, output: String) {
            let command = ([CVHostBinary.path, "run", "--plugin", "null:results=1", "--input", "testsrc:160x120@10", "--max-frames", "3",
                            "--http", "127.cam.lan:\(port)", "--http-linger", "0"] + extra).map { "'\($0)'" }.joined(separator: " ")
            let r = try Tool.run("unshare", ["-m", "/bin/sh", "-c", "mount --bind '\(folder)/hosts' /etc/hosts && exec \(command) 2>&1 >/dev/null"])
            return (r.status, r.output)
        }
        let refused = try run([])
        #expect(refused.status == 64, "\(refused.output)")
        #expect(refused.output.contains("--http 127.cam.lan:\(port) listens beyond this machine (127.cam.lan is 0.0.0.0)"), "\(refused.output)")
        let withToken = try run(["--http-token-file", folder + "/token"])
        #expect(withToken.status == 0, "\(withToken.output)")
    }

    @Test("--http 0: the port the system chose is in session.started's http, even with -q; null without --http")
    func chosenPort() throws {
        var health = 0
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "testsrc:160x120@10", "--http", "0", "-q",
                                      "--metrics-interval", "0"], timeout: 60, withStdin: false) { run in
            guard run.wait(until: { $0.contains("session.started") }),
                  let line = run.stdout.split(separator: "\n").first(where: { $0.contains("session.started") }),
                  let started = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let url = started["http"] as? String, let port = URLComponents(string: url)?.port else { return }
            health = (try? Self.http(port, "/healthz").status) ?? 0
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0 && health == 200, "healthz \(health): \(r.stderr)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        let without = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "testsrc:160x120", "--max-frames", "1", "-q"])
        #expect(without.events("session.started").first?["http"] is NSNull)
    }

    @Test("the stream shows the frames the drawn plugin processed (a slow one, on a 30 fps input), so that their boxes are drawn over their own picture")
    func picturesOfProcessedFrames() throws {
        let port = freeLoopbackPort()
        var shown: [Int] = []
        let r = try CVHostBinary.run(["run", "--plugin", "null:delay_ms=120,results=1", "--input", "testsrc:320x240@30", "--http", "127.0.0.1:\(port)",
                                      "--metrics-interval", "0"], timeout: 60, withStdin: false) { run in
            guard run.wait(until: { $0.contains("session.started") }) else { return }
            let reader = Process()
            reader.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            reader.arguments = ["python3", PluginFixtures.packageRoot + "/Tests/Servers/mjpeg_sequences.py", "\(port)", "4"]
            let out = Pipe()
            reader.standardOutput = out
            if (try? reader.run()) != nil {
                let text = out.fileHandleForReading.readDataToEndOfFile()
                reader.waitUntilExit()
                shown = (try? JSONSerialization.jsonObject(with: text) as? [Int]) ?? []
            }
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        let processed = Set(r.events("result").compactMap { $0["seq"] as? Int })
        // About one frame in four is processed: were the pictures the newest frames, about a quarter would be among them.
        let skipped = r.events("metrics").last.flatMap { ($0["frames"] as? [String: Any])?["dropped_total"] as? Int } ?? 0
        #expect(shown.count >= 5 && skipped > 0, "\(shown.count) pictures, \(skipped) frames not processed")
        // The first picture may come before the plugin's first frame.
        let unprocessed = shown.dropFirst().filter { !processed.contains($0) }
        #expect(unprocessed.isEmpty, "pictures of frames the plugin did not process: \(unprocessed) of \(shown)")
    }

    @Test("with --motion, each picture says where its frame moved (X-Motion: x,y,w,h boxes), which the page draws; without, no X-Motion")
    func motionBoxes() throws {
        for motion in [true, false] {
            let port = freeLoopbackPort()
            var header: String?
            let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc:320x240@30", "--http", "127.0.0.1:\(port)", "--metrics-interval", "0"]
                                         + (motion ? ["--motion", "on"] : []), timeout: 60, withStdin: false) { run in
                defer { kill(run.pid, SIGTERM) }
                guard run.wait(until: { $0.contains("session.started") }) else { return }
                // The test pattern's moving parts: a few pictures in, motion is seen.
                for _ in 0..<20 {
                    let h = try? Tool.run("curl", ["-s", "-D", "-", "-o", "/dev/null", "--max-time", "10", "http://127.0.0.1:\(port)/snapshot.jpg"]).output
                    header = h?.split(separator: "\r\n").first { $0.lowercased().hasPrefix("x-motion:") }.map(String.init)
                    if !motion || header.map({ !$0.dropFirst("x-motion:".count).trimmingCharacters(in: .whitespaces).isEmpty }) == true { break }
                    usleep(200_000)
                }
            }
            #expect(r.exitCode == 0, "\(r.stderr)")
            if motion {
                let boxes = (header ?? "").split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                let numbers = boxes.split(separator: ";").map { $0.split(separator: ",").compactMap { Int($0) } }
                #expect(!numbers.isEmpty && numbers.allSatisfy { $0.count == 4 && $0[0] >= 0 && $0[1] >= 0 && $0[0] + $0[2] <= 320 && $0[1] + $0[3] <= 240 },
                        "\(header ?? "no X-Motion")")
            } else {
                #expect(header == nil, "\(header ?? "")")
            }
        }
    }

    @Test("ten MJPEG viewers and one that stops reading: the plugin processes every frame, as without viewers, and memory stays flat")
    func manyViewers() throws {
        let clip = try MediaFixtures.make("viewers.ts", ["-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-frames:v", "600",
                                                         "-c:v", "libx264", "-preset", "ultrafast", "-f", "mpegts"])
        let baseline = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", clip, "--metrics-interval", "0"], timeout: 120)
        let expected = try #require(baseline.events("metrics").first?["frames"] as? [String: Any])["processed"] as? Int
        #expect(expected == 600)

        let port = freeLoopbackPort()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: clip))
        var rss: [Int] = []
        var viewersReport = ""
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "-", "--http", "127.0.0.1:\(port)", "--http-linger", "0",
                                      "--preview-fps", "30", "--preview-width", "1280", "--metrics-interval", "0"],
                                     timeout: 180, withStdin: true) { run in
            // Half the stream at once (FFmpeg reads what it needs to open it, and the server starts
            // once the input is open), the other half once the viewers are watching.
            let half = bytes.count / 2
            let watching = DispatchSemaphore(value: 0)
            let feeder = Thread {
                run.send(bytes: bytes.prefix(half))
                watching.wait()
                // Over about four seconds, so that memory is watched while the viewers are sent to.
                let rest = bytes.dropFirst(half)
                let chunk = max(1, rest.count / 20)
                var at = rest.startIndex
                while at < rest.endIndex {
                    let end = min(rest.endIndex, at + chunk)
                    run.send(bytes: rest[at..<end])
                    at = end
                    usleep(200_000)
                }
                run.closeStdin()
            }
            feeder.start()
            guard run.waitForStderr("live view at", timeout: 60) else {
                watching.signal()
                return
            }
            let viewers = Process()
            viewers.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            viewers.arguments = ["python3", PluginFixtures.packageRoot + "/Tests/Servers/mjpeg_viewers.py", "\(port)", "10", "1"]
            let toViewers = Pipe(), fromViewers = Pipe()
            viewers.standardInput = toViewers
            viewers.standardOutput = fromViewers
            guard (try? viewers.run()) != nil else {
                watching.signal()
                return
            }
            _ = fromViewers.fileHandleForReading.availableData  // "connected"
            let sampling = Box(true)
            let samples = Box<[Int]>([])
            let pid = run.pid
            let sampler = Thread {
                while sampling.value {
                    if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                       let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
                       let kb = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) {
                        samples.value.append(kb)
                    }
                    usleep(50_000)
                }
            }
            sampler.start()
            watching.signal()
            _ = run.wait(timeout: 150) { $0.contains("session.stopped") }
            sampling.value = false
            rss = samples.value
            try? toViewers.fileHandleForWriting.close()
            viewersReport = String(decoding: fromViewers.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            viewers.waitUntilExit()
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        let final = try #require(r.events("metrics").first?["frames"] as? [String: Any])
        #expect(final["processed"] as? Int == expected, "\(final)")
        let report = try #require(viewersReport.split(separator: "\n").last.flatMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }, "viewers said: \(viewersReport)")
        let readers = try #require(report["readers"] as? [[String: Int]])
        #expect(readers.count == 10 && readers.allSatisfy { ($0["pictures"] ?? 0) >= 1 }, "\(readers)")
        // Flat: after the first quarter of the run, resident memory moves by less than 40 MiB however
        // long the viewer that stopped reading is sent to (a queue per viewer would grow by 3 MB a second).
        let settled = Array(rss.dropFirst(rss.count / 4))
        // Sampled every 50 ms while the viewers watch: too few samples is a failure, not a pass.
        #expect(settled.count >= 10, "cvhost's memory was sampled \(rss.count) times: too few to say it stayed flat")
        if let low = settled.min(), let high = settled.max() {
            #expect(high - low < 40 * 1024, "RSS from \(low) to \(high) KiB: \(rss)")
        }
        print("viewers: \(readers.map { $0["pictures"] ?? 0 }) pictures; stalled closed: \(report["stalled_closed"] ?? ""); RSS KiB \(rss.min() ?? 0)...\(rss.max() ?? 0)")
    }
}

/// A screenshot's pixels (RGB, through ffmpeg), and where things are in it.
struct Screenshot {
    let width: Int, height: Int
    let rgb: [UInt8]

    init(_ png: String, width: Int, height: Int) throws {
        let raw = png + ".rgb"
        try Tool.check("ffmpeg", ["-loglevel", "error", "-y", "-i", png, "-f", "rawvideo", "-pix_fmt", "rgb24", raw])
        rgb = Array(try Data(contentsOf: URL(fileURLWithPath: raw)))
        self.width = width
        self.height = height
        guard rgb.count == width * height * 3 else { throw CocoaError(.fileReadCorruptFile) }
    }

    func pixel(_ x: Int, _ y: Int) -> (Int, Int, Int) {
        let i = (y * width + x) * 3
        return (Int(rgb[i]), Int(rgb[i + 1]), Int(rgb[i + 2]))
    }

    /// The demo's grey background (about 200, 200, 200): the picture is the box of the rows and
    /// columns where it covers a hundred pixels or more (the page's own greys are thin lines).
    func pictureBox() -> (x: Int, y: Int, width: Int, height: Int)? {
        func grey(_ x: Int, _ y: Int) -> Bool {
            let (r, g, b) = pixel(x, y)
            return abs(r - 200) < 12 && abs(g - 200) < 12 && abs(b - 200) < 12
        }
        let rows = (0..<height).filter { y in (0..<width).lazy.filter { grey($0, y) }.count >= 100 }
        let columns = (0..<width).filter { x in rows.lazy.filter { grey(x, $0) }.count >= 100 }
        guard let top = rows.first, let bottom = rows.last, let left = columns.first, let right = columns.last,
              right - left > 200 else { return nil }
        return (left, top, right - left + 1, bottom - top + 1)
    }

    /// The outline's green (#00e676) within 4 pixels.
    func hasOutline(nearX x: Int, y: Int) -> Bool {
        for dy in -4...4 {
            for dx in -4...4 where (0..<width).contains(x + dx) && (0..<height).contains(y + dy) {
                let (r, g, b) = pixel(x + dx, y + dy)
                if r < 90 && g > 170 && b > 70 && b < 170 { return true }
            }
        }
        return false
    }
}
