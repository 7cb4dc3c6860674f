import CVHostTestSupport
import Foundation
import Testing

/// A running cvhost changed without a restart: inputs added, changed and removed over HTTP and on
/// stdin, while the others go on.
@Suite("changing a running cvhost")
struct RunChangesTests {
    /// The JSON lines written so far.
    static func lines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    static func of(_ lines: [[String: Any]], _ event: String, source: String) -> [[String: Any]] {
        lines.filter { $0["event"] as? String == event && $0["source"] as? String == source }
    }

    /// A JSON request to the live view: the status and the answer's fields.
    static func send(_ port: Int, _ method: String, _ path: String, _ body: String? = nil,
                     headers: [String] = []) throws -> (status: Int, json: [String: Any]) {
        let r = try LiveViewTests.http(port, path, method: method, body: body, headers: ["Content-Type: application/json"] + headers)
        return (r.status, (try? JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any]) ?? ["body": r.body])
    }

    /// What a process holds: threads, open descriptors, child processes (plugin workers). Not the
    /// shared memory blocks of frames (unlinked files): the pool keeps a few free for the next
    /// frames of any input (SharedMemoryPool.maxFreeBlocks).
    static func holdings(_ pid: Int32) -> (threads: Int, fds: Int, children: Int) {
        let fm = FileManager.default
        let threads = (try? fm.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? -1
        let fds = ((try? fm.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).filter { fd in
            !((try? fm.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"))?.hasSuffix("(deleted)") ?? false)
        }.count
        var children = 0
        for entry in (try? fm.contentsOfDirectory(atPath: "/proc")) ?? [] where Int32(entry) != nil {
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, Int32(fields[1]) == pid { children += 1 }
        }
        return (threads, fds, children)
    }

    /// One run that the tests below look at: one input, eight more added one by one over HTTP
    /// (files, RTSP, the test pattern), refusals, three removed, one changed, the rest removed;
    /// what the process held before and after. Made once, by the first test that asks.
    struct AddChangeRemove: @unchecked Sendable {
        var r: CommandResult
        var answers: [String: (Int, [String: Any])]
        var before: (threads: Int, fds: Int, children: Int)
        var after: (threads: Int, fds: Int, children: Int)
        var stdoutDuring: String
        var all: [[String: Any]] { RunChangesTests.lines(r.stdout) }
    }

    static let addChangeRemove = Result { () throws -> AddChangeRemove in
        let clip = try StreamFixtures.longCodes(times: 10)
        let server = try TestServer("rtsp_server.py", ["--file", clip])
        defer { server.stop() }
        let port = freeLoopbackPort()
        let demo = BarcodeFixtures.demoVideo
        var answers: [String: (Int, [String: Any])] = [:]
        var before = (threads: 0, fds: 0, children: 0), after = before
        var stdoutDuring = ""
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--plugin", "null:results=1,isolation=process",
                                      "--input", "base=testsrc:160x120@15", "--backpressure", "block", "--http", "127.0.0.1:\(port)",
                                      "--max-inputs", "9", "--metrics-interval", "0", "--allow-inputs", "network+files"], timeout: 240, withStdin: false) { run in
            defer { kill(run.pid, SIGTERM) }
            guard run.wait(timeout: 60, until: { Self.of(Self.lines($0), "result", source: "base").count >= 10 }) else { return }
            before = Self.holdings(run.pid)
            let added: [(String, String)] = [
                ("f1", demo), ("f2", demo), ("r1", "rtsp://127.0.0.1:\(server.port)/codes"), ("t1", "testsrc:160x120@15"),
                ("f3", demo), ("r2", "rtsp://127.0.0.1:\(server.port)/codes"), ("t2", "testsrc:160x120@15"), ("f4", demo),
            ]
            for (name, input) in added {
                answers[name] = try? Self.send(port, "POST", "/inputs", #"{"name":"\#(name)","input":"\#(input)"}"#)
            }
            // Refusals: the limit (9 inputs), a name taken, an input that cannot be opened, a plugin the run lacks, another site's page.
            answers["limit"] = try? Self.send(port, "POST", "/inputs", #"{"name":"x9","input":"testsrc"}"#)
            for name in ["r1", "t1", "r2"] { answers["-" + name] = try? Self.send(port, "DELETE", "/inputs/\(name)") }
            answers["taken"] = try? Self.send(port, "POST", "/inputs", #"{"name":"t2","input":"testsrc"}"#)
            answers["unopenable"] = try? Self.send(port, "POST", "/inputs", #"{"name":"gone","input":"rtsp://127.0.0.1:1/none"}"#)
            answers["no-plugin"] = try? Self.send(port, "POST", "/inputs", #"{"name":"p","input":"testsrc","plugins":["detect"]}"#)
            answers["origin"] = try? Self.send(port, "POST", "/inputs", #"{"name":"evil","input":"testsrc"}"#, headers: ["Origin: http://evil.example"])
            answers["form"] = (try? LiveViewTests.http(port, "/inputs", method: "POST", body: #"{"name":"evil","input":"testsrc"}"#,
                                                       headers: ["Content-Type: text/plain"])).map { ($0.status, [:]) }
            answers["change"] = try? Self.send(port, "PUT", "/inputs/t2", #"{"input":"testsrc:320x240@15"}"#)
            answers["list"] = try? Self.send(port, "GET", "/inputs")
            // The files end by themselves; the changed input delivers; then the rest is removed and what they held is counted.
            _ = run.wait(timeout: 90) { out in
                let l = Self.lines(out)
                let t2 = l.filter { $0["source"] as? String == "t2" }
                let restarted = t2.indices.filter { t2[$0]["event"] as? String == "session.started" }.dropFirst().first
                return ["f1", "f2", "f3", "f4"].allSatisfy { !Self.of(l, "session.stopped", source: $0).isEmpty }
                    && restarted.map { t2[$0...].contains { $0["event"] as? String == "result" } } == true
            }
            for name in ["f1", "f2", "f3", "f4", "t2"] { answers["-" + name] = try? Self.send(port, "DELETE", "/inputs/\(name)") }
            answers["again"] = try? Self.send(port, "DELETE", "/inputs/t2")
            answers["get gone"] = try? Self.send(port, "GET", "/inputs/t2")
            answers["get base"] = try? Self.send(port, "GET", "/inputs/base")
            // What the removed inputs held is let go as their threads end (dispatch's idle ones
            // within a few seconds): looked at until it is, or 60 s have passed.
            let deadline = Date() + 60
            repeat {
                after = Self.holdings(run.pid)
                if after.children == before.children && after.fds <= before.fds + 2 && after.threads <= before.threads + 4 { break }
                usleep(100_000)
            } while Date() < deadline
            stdoutDuring = run.stdout
        }
        return AddChangeRemove(r: r, answers: answers, before: before, after: after, stdoutDuring: stdoutDuring)
    }

    @Test("inputs added, changed and removed over HTTP are each answered as they should be: 201, 200, the limit and a name taken 409, an input that cannot be opened or a plugin the run lacks 422, another site's page 403, a form 415")
    func addChangeRemoveAnswers() throws {
        let run = try Self.addChangeRemove.get()
        let (r, answers, stdoutDuring) = (run.r, run.answers, run.stdoutDuring)
        #expect(r.exitCode == 0, "\(r.stderr.suffix(3000))")
        #expect(!stdoutDuring.isEmpty)
        for name in ["f1", "f2", "r1", "t1", "f3", "r2", "t2", "f4"] { #expect(answers[name]?.0 == 201, "\(name): \(answers[name].map { "\($0.1)" } ?? "none")") }
        #expect(answers["limit"]?.0 == 409 && "\(answers["limit"]!.1["error"] ?? "")".contains("--max-inputs 9"), "\(answers["limit"].map { "\($0)" } ?? "")")
        #expect(answers["taken"]?.0 == 409, "\(answers["taken"].map { "\($0)" } ?? "")")
        #expect(answers["unopenable"]?.0 == 422 && "\(answers["unopenable"]!.1["error"] ?? "")".hasPrefix("gone: "), "\(answers["unopenable"].map { "\($0)" } ?? "")")
        #expect(answers["no-plugin"]?.0 == 422 && "\(answers["no-plugin"]!.1["error"] ?? "")".contains("no plugin detect"))
        #expect(answers["origin"]?.0 == 403)
        #expect(answers["form"]?.0 == 415)
        #expect(answers["change"]?.0 == 200, "\(answers["change"].map { "\($0)" } ?? "")")
        for name in ["r1", "t1", "r2", "f1", "f2", "f3", "f4", "t2"] { #expect(answers["-" + name]?.0 == 200, "\(name): \(answers["-" + name].map { "\($0)" } ?? "")") }
        #expect(answers["again"]?.0 == 404 && answers["get gone"]?.0 == 404)
        #expect(((answers["get base"]?.1["result"] as? [String: Any])?["inputs"] as? [[String: Any]])?.map { $0["name"] as? String } == ["base"])
        let listed = (answers["list"]?.1["result"] as? [String: Any])?["inputs"] as? [[String: Any]] ?? []
        #expect(listed.compactMap { $0["name"] as? String }.sorted() == ["base", "f1", "f2", "f3", "f4", "t2"], "\(listed)")

    }

    @Test("while eight inputs come and go, the first goes on: one session, every frame's result in order without a gap, stopped by the signal; one run session throughout")
    func addChangeRemoveFirstGoesOn() throws {
        let r = try Self.addChangeRemove.get().r
        let all = Self.lines(r.stdout)
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        // The first input: one session, every frame's result in order without a gap, stopped by the signal.
        let base = Self.of(all, "result", source: "base").filter { $0["plugin_index"] as? Int == 0 }.compactMap { $0["seq"] as? Int }
        #expect(base.count > 20 && base == Array(0..<base.count), "base's results: \(base.prefix(40))")
        #expect(Self.of(all, "session.started", source: "base").count == 1)
        #expect(Self.of(all, "session.stopped", source: "base").map { $0["reason"] as? String } == ["signal"])
        #expect(Set(all.compactMap { $0["session"] as? String }).count == 1)
    }

    @Test("each input added starts with input.added and session.started and delivers; each removed ends with its final metrics and session.stopped (removed); the changed one starts again at its new size")
    func addChangeRemoveEachInput() throws {
        let all = try Self.addChangeRemove.get().all
        // Each added input: input.added, then its session.started, its results.
        for name in ["f1", "f2", "r1", "t1", "f3", "r2", "t2", "f4"] {
            let mine = all.filter { $0["source"] as? String == name }
            #expect(mine.first?["event"] as? String == "input.added", "\(name): \(mine.first ?? [:])")
            #expect(mine.dropFirst().first?["event"] as? String == "session.started")
            #expect(!Self.of(all, "result", source: name).isEmpty, "\(name) delivered results")
        }
        // Removed ones: input.removed, then the final metrics of both plugins, then session.stopped (reason removed) last.
        for name in ["r1", "t1", "r2"] {
            let mine = all.filter { $0["source"] as? String == name }
            let removed = try #require(mine.firstIndex { $0["event"] as? String == "input.removed" }, "\(name)")
            let tail = mine[removed...].map { $0["event"] as? String ?? "" }
            #expect(tail.last == "session.stopped" && mine.last?["reason"] as? String == "removed", "\(name): \(tail)")
            #expect(mine[removed...].filter { $0["event"] as? String == "metrics" && $0["final"] as? Bool == true }.count == 2, "\(name)")
        }
        // The changed input: ended as removed, started again at its new size.
        let t2 = Self.of(all, "session.started", source: "t2")
        #expect(t2.count == 2 && ((t2.last?["format"] as? [String: Any])?["width"] as? Int) == 320, "\(t2)")
        #expect(Self.of(all, "session.stopped", source: "t2").first?["reason"] as? String == "removed")
    }

    @Test("what the eight added inputs held is let go: threads, descriptors and worker processes as with the first input alone")
    func addChangeRemoveNothingLeft() throws {
        let run = try Self.addChangeRemove.get()
        let (before, after) = (run.before, run.after)
        // What the eight held is let go: threads, descriptors and worker processes as with the first input alone.
        #expect(after.children == before.children, "worker processes: \(before) then \(after)")
        #expect(after.fds <= before.fds + 2, "descriptors: \(before) then \(after)")
        #expect(after.threads <= before.threads + 4, "threads: \(before) then \(after)")
    }

    @Test("over HTTP an input names only what --allow-inputs allows (403 for a listener, a camera, a file whether there or not, one answer for both); an input that cannot be opened says why only with a token; three adds waiting for a silent camera hold back no removal of another input")
    func allowedAndConcurrent() throws {
        let port = freeLoopbackPort()
        let silent = freeLoopbackPort(udp: true)
        final class Order: @unchecked Sendable {
            private let lock = NSLock()
            private var list: [String] = []
            func add(_ s: String) { lock.withLock { list.append(s) } }
            var all: [String] { lock.withLock { list } }
        }
        let done = Order()
        var answers: [String: (Int, [String: Any])] = [:]
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "side=testsrc:160x120@10", "--input", "other=testsrc:160x120@10",
                                      "--http", "127.0.0.1:\(port)", "--open-timeout", "20", "--metrics-interval", "0"], timeout: 180, withStdin: false) { run in
            defer { kill(run.pid, SIGTERM) }
            guard run.wait(timeout: 60, until: { Self.of(Self.lines($0), "result", source: "other").count >= 2 }) else { return }
            for (name, body) in [("listen", #"{"name":"l","input":"tcp://127.0.0.1:\#(freeLoopbackPort())?listen=1"}"#),
                                 ("there", #"{"name":"f","input":"/etc/hostname"}"#), ("missing", #"{"name":"f","input":"/etc/no-such-file"}"#),
                                 ("camera", #"{"name":"c","device":"/dev/video0"}"#),
                                 ("unopenable", #"{"name":"gone","input":"rtsp://127.0.0.1:1/none"}"#)] {
                answers[name] = try? Self.send(port, "POST", "/inputs", body)
            }
            // Three adds of a camera that sends nothing: each waits up to --open-timeout, side by side.
            let group = DispatchGroup()
            for n in 0..<3 {
                DispatchQueue.global().async(group: group) {
                    _ = try? Self.send(port, "POST", "/inputs", #"{"name":"slow\#(n)","input":"udp://127.0.0.1:\#(silent + n)"}"#)
                    done.add("add")
                }
            }
            // Once the three are on their way (each then waits for its silent camera).
            usleep(500_000)
            answers["remove"] = try? Self.send(port, "DELETE", "/inputs/other")
            done.add("remove")
            _ = group.wait(timeout: .now() + 120)
        }
        #expect(r.exitCode == 0, "\(r.stderr.suffix(2000))")
        for name in ["listen", "there", "missing", "camera"] { #expect(answers[name]?.0 == 403, "\(name): \(answers[name].map { "\($0)" } ?? "none")") }
        func error(_ name: String) -> String { "\(answers[name]?.1["error"] ?? "")" }
        #expect(error("listen").contains("--allow-inputs listen") && error("camera").contains("--allow-inputs devices"))
        #expect(error("there").replacingOccurrences(of: "/etc/hostname", with: "X") == error("missing").replacingOccurrences(of: "/etc/no-such-file", with: "X"))
        // Without a token the answer does not say why (a refused port and a missing file would read apart); stderr does.
        #expect(answers["unopenable"]?.0 == 422 && error("unopenable") == "gone: it cannot be opened (why is on cvhost's stderr; with a token, --http-token-file, the answer says)")
        #expect(r.stderr.contains("an input added over HTTP cannot be opened"), "\(r.stderr.suffix(1000))")
        #expect(answers["remove"]?.0 == 200)
        #expect(done.all.first == "remove", "the removal waited for the adds: \(done.all)")
    }

    @Test("on stdin: add_input, get_inputs and remove_input, each answered by a command.result")
    func onStdin() throws {
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "base=testsrc:160x120@15", "--metrics-interval", "0"],
                                     timeout: 60, withStdin: true) { run in
            guard run.wait(until: { $0.contains("\"event\":\"result\"") }) else { return }
            run.send(#"{"command":"add_input","id":1,"name":"more","input":"testsrc:160x120@15"}"#)
            guard run.wait(until: { Self.of(Self.lines($0), "result", source: "more").count >= 3 }) else { return }
            run.send(#"{"command":"get_inputs","id":2}"#)
            run.send(#"{"command":"remove_input","id":3,"name":"more"}"#)
            run.send(#"{"command":"add_input","id":4,"name":"more","input":"/no/such/file.mp4"}"#)
            // A password in an added input's URL is never written, on stdout or stderr.
            run.send(#"{"command":"add_input","id":5,"input":"rtsp://user:hunter2@127.0.0.1:1/cam"}"#)
            _ = run.wait(until: { $0.contains("\"id\":4") && $0.contains("\"id\":5") })
            run.send(#"{"command":"stop"}"#)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        let answers = r.events("command.result")
        func answer(_ id: Int) -> [String: Any] { answers.first { $0["id"] as? Int == id } ?? [:] }
        #expect(answer(1)["ok"] as? Bool == true, "\(answer(1))")
        let listed = ((answer(2)["result"] as? [String: Any])?["inputs"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(listed == ["base", "more"])
        #expect(answer(3)["ok"] as? Bool == true)
        #expect(answer(4)["ok"] as? Bool == false && (answer(4)["error"] as? String ?? "").contains("/no/such/file.mp4"), "\(answer(4))")
        #expect(r.events("input.added").first?["by"] as? String == "stdin")
        #expect(answer(5)["ok"] as? Bool == false && (answer(5)["error"] as? String ?? "").contains("rtsp://user:***@127.0.0.1:1/cam"), "\(answer(5))")
        #expect(!r.stdout.contains("hunter2") && !r.stderr.contains("hunter2"))
        #expect(r.events("session.stopped").first { $0["source"] as? String == "more" }?["reason"] as? String == "removed")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
    }

    @Test("a line added while the walker approaches it counts the walker; a zone changed keeps its counts, moved starts anew; refusals")
    func analyticsWhileRunning() throws {
        let port = freeLoopbackPort()
        var answers: [String: (Int, [String: Any])] = [:]
        var metrics = ""
        // The walker's box moves 10 px a frame at 5 frames a second: its anchor (bottom centre) reaches x=250 at frame 22.
        let r = try CVHostBinary.run(["run", "--plugin", try AnalyticsTests.walker(), "--plugin", "null", "--input", "testsrc:320x240@5",
                                      "--max-frames", "32", "--metrics-interval", "0", "--track", "walker",
                                      "--zone", "right=170,0 90000,0 90000,240 170,240", "--http", "127.0.0.1:\(port)", "--http-linger", "0"],
                                     timeout: 120, environment: AnalyticsTests.python, withStdin: false) { run in
            guard run.wait(until: { $0.contains("\"event\":\"track.started\"") }) else { return }
            answers["line"] = try? Self.send(port, "PUT", "/lines/door", #"{"points":[[250,0],[250,240]],"in":"left"}"#)
            answers["bad points"] = try? Self.send(port, "PUT", "/lines/two", #"{"points":[[1,1],[1,1]]}"#)
            answers["no input"] = try? Self.send(port, "PUT", "/zones/far", #"{"points":[[0,0],[10,0],[10,10]],"input":"cam9"}"#)
            answers["no plugin"] = try? Self.send(port, "PUT", "/tracks/detect", "{}")
            answers["not there"] = try? Self.send(port, "DELETE", "/lines/none")
            answers["last track"] = try? Self.send(port, "DELETE", "/tracks/walker")
            answers["stray"] = try? Self.send(port, "PUT", "/lines/door", #"{"points":[[250,0],[250,240]],"dwell":3}"#)
            guard run.wait(until: { $0.contains("\"event\":\"zone.entered\"") }) else { return }
            answers["zone kept"] = try? Self.send(port, "PUT", "/zones/right", #"{"points":[[170,0],[90000,0],[90000,240],[170,240]],"dwell":60}"#)
            answers["list"] = try? Self.send(port, "GET", "/analytics")
            guard run.wait(until: { $0.contains("\"event\":\"line.crossed\"") }) else { return }
            metrics = (try? LiveViewTests.http(port, "/metrics").body) ?? ""
            answers["zone moved"] = try? Self.send(port, "PUT", "/zones/right", #"{"points":[[0,0],[100,0],[100,240],[0,240]]}"#)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        func status(_ k: String) -> Int { answers[k]?.0 ?? 0 }
        func result(_ k: String) -> [String: Any] { answers[k]?.1["result"] as? [String: Any] ?? [:] }
        func error(_ k: String) -> String { answers[k]?.1["error"] as? String ?? "" }
        #expect(status("line") == 201 && result("line")["change"] as? String == "added", "\(answers["line"].map { "\($0)" } ?? "")")
        #expect(status("bad points") == 400 && error("bad points").hasPrefix("line two: its two points are the same"), "\(error("bad points"))")
        #expect(status("no input") == 422 && error("no input").contains("no input called cam9"))
        #expect(status("no plugin") == 422 && error("no plugin").contains("no plugin detect"))
        #expect(status("not there") == 404)
        #expect(status("last track") == 409 && error("last track").contains("remove them first"))
        #expect(status("stray") == 400 && error("stray").contains("a line has no \"dwell\""), "\(error("stray"))")
        #expect(status("zone kept") == 200 && result("zone kept")["counts"] as? String == "kept")
        #expect(status("zone moved") == 200 && result("zone moved")["counts"] as? String == "reset")
        let listed = result("list")
        #expect((listed["lines"] as? [[String: Any]])?.first?["name"] as? String == "door" && (listed["tracks"] as? [[String: Any]])?.count == 1, "\(listed)")
        // The walker crossed the line added while it approached: counted once, in /metrics and on the line's event.
        let crossed = r.events("line.crossed")
        #expect(crossed.count == 1 && (crossed.first?["data"] as? [String: Any])?["line"] as? String == "door", "\(crossed)")
        #expect(LiveViewTests.sample(metrics, "cvhost_line_crossings_total", ["line": "door", "direction": "in"]) == 1, "\(metrics.prefix(0))")
        let changes = r.events("analytics.changed")
        #expect(changes.map { "\($0["kind"] ?? "") \($0["name"] ?? "") \($0["change"] ?? "") \($0["counts"] ?? "")" }
                == ["line door added reset", "zone right changed kept", "zone right changed reset"], "\(changes)")
        // The line's crossing comes after its analytics.changed: the change landed between two frames.
        let events = r.events.map { $0["event"] as? String ?? "" }
        #expect((events.firstIndex(of: "analytics.changed") ?? .max) < (events.firstIndex(of: "line.crossed") ?? -1))
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
    }

    @Test("the live view draws: a line (two clicks) and a zone (clicks, closed on its first point) drawn by mouse in headless Chromium, named and saved; the run reports analytics.changed and counts with them")
    func drawnInTheLiveView() throws {
        let port = freeLoopbackPort()
        // A walker that goes round: right across the picture at 10 px a frame (5 frames a second), then from the left again.
        let plugin = try AnalyticsTests.walker(lap: 30)
        /// Where a frame's pixel is on the screen, for a click.
        func at(_ x: Int, _ y: Int) -> String {
            "(() => { if (!frame) return null; const m = document.getElementById('overlay').getScreenCTM(); return [m.a * \(x) + m.e, m.d * \(y) + m.f]; })()"
        }
        let counts = "document.getElementById('counts').textContent"
        var seen: [String: Any]?
        let r = try CVHostBinary.run(["run", "--plugin", plugin, "--input", "cam=testsrc:320x240@5", "--max-frames", "900", "--metrics-interval", "0",
                                      "--track", "walker", "--http", "127.0.0.1:\(port)"], timeout: 300, environment: AnalyticsTests.python,
                                     withStdin: false) { run in
            defer { kill(run.pid, SIGTERM) }
            guard run.wait(timeout: 120, until: { $0.contains("\"event\":\"track.started\"") }) else { return }
            // Each click is checked to have landed (the page may move under a busy machine: then it is clicked again).
            let drawn = "(typeof drawing !== 'undefined' && drawing ? drawing.points.length : -1)"
            seen = PageProbe.steps("http://127.0.0.1:\(port)/", [
                ["wait": "typeof frame !== 'undefined' && frame !== null && frame.width === 320"],
                ["click": PageProbe.centre(of: "draw-line"), "then": "\(drawn) === 0"],
                ["click": at(250, 10), "then": "\(drawn) === 1"], ["click": at(250, 230), "then": "\(drawn) === 2"],
                ["wait": "!document.getElementById('draw-save').disabled && (window.lineDrawn = document.getElementById('draw-points').textContent)"],
                ["click": PageProbe.centre(of: "draw-name"), "then": "document.activeElement.id === 'draw-name'"], ["type": "door"],
                ["wait": "document.getElementById('draw-name').value === 'door'"],
                ["click": PageProbe.centre(of: "draw-save"), "then": "drawing === null || document.getElementById('draw-save').disabled"],
                ["wait": "\(counts).includes('door: in')"],
                ["click": PageProbe.centre(of: "draw-zone"), "then": "\(drawn) === 0"],
                ["click": at(200, 20), "then": "\(drawn) === 1"], ["click": at(310, 20), "then": "\(drawn) === 2"],
                ["click": at(310, 220), "then": "\(drawn) === 3"], ["click": at(200, 220), "then": "\(drawn) === 4"],
                ["click": at(201, 21), "then": "drawing && drawing.closed"],
                ["wait": "!document.getElementById('draw-save').disabled && (window.zoneDrawn = document.getElementById('draw-points').textContent)"],
                ["click": PageProbe.centre(of: "draw-name"), "then": "document.activeElement.id === 'draw-name'"], ["type": "bay"],
                ["wait": "document.getElementById('draw-name').value === 'bay'"],
                ["click": PageProbe.centre(of: "draw-save"), "then": "drawing === null || document.getElementById('draw-save').disabled"],
                ["wait": "\(counts).includes('door: in 1') && \(counts).includes('bay: ') && ({ line: window.lineDrawn, zone: window.zoneDrawn, counts: \(counts) })"],
            ], timeout: 180)
            // The walker's next lap enters the zone saved last: waited for, not assumed (a loaded machine is slow to get there).
            _ = run.wait(timeout: 120) { out in
                out.split(separator: "\n").contains { $0.contains("\"event\":\"zone.entered\"") && $0.contains("\"zone\":\"bay\"") }
            }
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        let value = try #require(seen, "the probe gave nothing: \(r.stderr.suffix(2000))")
        try #require(value["failed"] == nil, "\(value["failed"] ?? ""): the page said \(value["page"] ?? "")")
        // The points clicked, in the frame's pixels (a pixel or two off: the picture is scaled on the screen).
        func points(_ text: Any?) -> [[Int]] { (text as? String ?? "").split(separator: " ").map { $0.split(separator: ",").compactMap { Int($0) } } }
        func near(_ a: [[Int]], _ b: [[Int]]) -> Bool { a.count == b.count && zip(a, b).allSatisfy { abs($0[0] - $1[0]) <= 2 && abs($0[1] - $1[1]) <= 2 } }
        #expect(near(points(value["line"]), [[250, 10], [250, 230]]), "\(value)")
        #expect(near(points(value["zone"]), [[200, 20], [310, 20], [310, 220], [200, 220]]), "\(value)")
        let changes = r.events("analytics.changed")
        #expect(changes.map { "\($0["kind"] ?? "") \($0["name"] ?? "") \($0["change"] ?? "") \($0["by"] ?? "") \($0["source"] ?? "")" }
                == ["line door added http cam", "zone bay added http cam"], "\(changes)")
        let events = r.events.map { $0["event"] as? String ?? "" }
        let crossed = r.events("line.crossed").filter { ($0["data"] as? [String: Any])?["line"] as? String == "door" }
        #expect(!crossed.isEmpty && (events.firstIndex(of: "analytics.changed") ?? .max) < (events.firstIndex(of: "line.crossed") ?? -1))
        #expect(r.events("zone.entered").contains { ($0["data"] as? [String: Any])?["zone"] as? String == "bay" })
    }

    @Test("--state keeps the changes made while running for the next start (a zone of an input removed is set aside, said); SIGHUP reloads the config file: only what changed is applied, a config with an error is refused and the run goes on")
    func stateAndReload() throws {
        let folder = TestFolders.make("state")
        let state = folder + "/kept/state.json", config = folder + "/gate.yaml"
        let port = freeLoopbackPort()
        func write(_ extra: String) throws {
            try """
                plugin: ["null:results=1"]
                input: ["base=testsrc:160x120@10", "side=testsrc:160x120@10"]
                track: ["null"]
                zone: ["bay=0,0 50,0 50,50", "edge=0,0 20,0 20,20:input=side"]
                http: 127.0.0.1:\(port)
                metrics-interval: 0
                state: \(state)
                \(extra)
                """.write(toFile: config, atomically: true, encoding: .utf8)
        }
        try write("")
        // The first run: an input added, one removed, a line drawn; each kept.
        var answers: [Int] = []
        let first = try CVHostBinary.run(["run", "--config", config], timeout: 90, withStdin: false) { run in
            defer { kill(run.pid, SIGTERM) }
            guard run.wait(until: { Self.of(Self.lines($0), "result", source: "side").count >= 2 }) else { return }
            answers.append((try? Self.send(port, "POST", "/inputs", #"{"name":"extra","input":"testsrc:160x120@10"}"#))?.status ?? 0)
            answers.append((try? Self.send(port, "DELETE", "/inputs/side"))?.status ?? 0)
            answers.append((try? Self.send(port, "PUT", "/lines/door", #"{"points":[[10,10],[100,10]]}"#))?.status ?? 0)
        }
        #expect(first.exitCode == 0 && answers == [201, 200, 201], "\(answers) \(first.stderr)")
        var info = stat()
        #expect(stat(state, &info) == 0 && info.st_mode & 0o777 == 0o600, "the state file is its owner's alone")
        let kept = (try? String(contentsOfFile: state, encoding: .utf8)) ?? ""
        let keptLine = ((try? JSONSerialization.jsonObject(with: Data(kept.utf8))) as? [String: Any])
            .flatMap { ($0["lines"] as? [String: Any])?["door"] as? [String: Any] }
        #expect(kept.contains("\"extra\"") && kept.contains("\"side\" : null") && keptLine?["points"] as? [[Double]] == [[10, 10], [100, 10]], "\(kept)")

        // The next start applies them over the config; SIGHUP then applies an edited config.
        var reloaded = ""
        let second = try CVHostBinary.run(["run", "--config", config], timeout: 120, withStdin: false) { run in
            defer { kill(run.pid, SIGTERM) }
            guard run.wait(until: { Self.of(Self.lines($0), "result", source: "extra").count >= 2 }) else { return }
            try? write("")  // the same file, but
            try? String(contentsOfFile: config, encoding: .utf8)
                .replacingOccurrences(of: "bay=0,0 50,0 50,50", with: "bay=0,0 80,0 80,80")
                .replacingOccurrences(of: "\"side=testsrc:160x120@10\"", with: "\"third=testsrc:160x120@10\"")
                .write(toFile: config, atomically: true, encoding: .utf8)
            kill(run.pid, SIGHUP)
            guard run.wait(until: { Self.of(Self.lines($0), "result", source: "third").count >= 2 && $0.contains("\"event\":\"analytics.changed\"") })
            else { return }
            // A config with an error: refused, said, and the run goes on as it was.
            try? "plugin: [\"null\"\n  oops: [".write(toFile: config, atomically: true, encoding: .utf8)
            kill(run.pid, SIGHUP)
            _ = run.waitForStderr("the run goes on as it was")
            let before = Self.of(Self.lines(run.stdout), "result", source: "base").count
            _ = run.wait(until: { Self.of(Self.lines($0), "result", source: "base").count >= before + 3 })
            reloaded = run.stdout
        }
        #expect(second.exitCode == 0, "\(second.stderr)")
        #expect(!reloaded.isEmpty)
        let all = Self.lines(second.stdout)
        let started = all.filter { $0["event"] as? String == "session.started" }.compactMap { $0["source"] as? String }
        #expect(started == ["base", "extra", "third"], "the kept inputs at start (side removed, extra added), then the reload's: \(started)")
        #expect(Self.of(all, "input.added", source: "third").first?["by"] as? String == "reload")
        let changes = all.filter { $0["event"] as? String == "analytics.changed" }
        #expect(changes.map { "\($0["kind"] ?? "") \($0["name"] ?? "") \($0["change"] ?? "") \($0["counts"] ?? "") \($0["by"] ?? "")" }
                == ["zone bay changed reset reload"], "only the zone that changed: \(changes)")
        // The input the reload did not touch goes on: one session, every frame's result in order.
        let base = Self.of(all, "result", source: "base").compactMap { $0["seq"] as? Int }
        #expect(base == Array(0..<base.count) && base.count > 4, "\(base.prefix(30))")
        #expect(second.stderr.contains("reload: ") && second.stderr.contains("the run goes on as it was"), "\(second.stderr)")
        // The zone of the input the first run removed is set aside, said, not refused (exit 64 before).
        #expect(second.stderr.contains("--zone edge watches input side, which was removed while cvhost ran (--state): it is set aside"), "\(second.stderr)")
        // The line kept from the first run is there from the start.
        let summary = (all.first { $0["event"] as? String == "session.started" }?["plugins"] as? [[String: Any]])?.first?["analytics"] as? [String: Any]
        #expect((summary?["lines"] as? [[String: Any]])?.first?["name"] as? String == "door", "\(summary ?? [:])")

        // A state file others can write is not read.
        try write("")
        chmod(state, 0o666)
        let refused = try CVHostBinary.run(["run", "--config", config, "--duration", "1"], timeout: 30)
        #expect(refused.exitCode == 64 && refused.stderr.contains("the state file \(state) can be written by every user"), "\(refused.stderr)")
    }
}
