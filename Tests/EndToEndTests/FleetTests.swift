import CVHostTestSupport
import Foundation
import Glibc
import Testing

/// A site of cvhost nodes on a 3-server NATS JetStream cluster (all on loopback, started here):
/// inputs given with `cvhost fleet add-input` spread over the nodes and every input's results
/// arrive; a node killed (SIGKILL) has its inputs taken over within the lease time and a few
/// seconds, one stopped cleanly (SIGTERM) at once; a node frozen past its lease (SIGSTOP) writes
/// nothing for its inputs once it wakes; a NATS server killed stops nothing; a malformed key, an
/// input needing a plugin no node has, a store out of reach, the command's refusals.
@Suite("A fleet: a site's inputs on many nodes, taken over when one dies", .serialized)
struct FleetTests {
    static let lease = 10.0

    /// The site's state now, as `cvhost fleet status --json` says it.
    /// (Tried again for 15 s: while a NATS server that led the buckets is away, a request may fail until another leads.)
    func status(_ url: String) -> [String: Any] {
        let deadline = Date().addingTimeInterval(15)
        repeat {
            if let r = try? CVHostBinary.run(["fleet", "--fleet", url, "status", "--json"], timeout: 30), r.exitCode == 0,
               let o = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] { return o }
            usleep(500_000)
        } while Date() < deadline
        return [:]
    }

    /// input -> owner (nil: none), for the inputs that are streaming (or every input, `running: false`).
    func owners(_ url: String, streaming: Bool = true) -> [String: String] {
        var out: [String: String] = [:]
        for i in status(url)["inputs"] as? [[String: Any]] ?? [] {
            guard let name = i["name"] as? String, let owner = i["owner"] as? String else { continue }
            if !streaming || i["state"] as? String == "streaming" { out[name] = owner }
        }
        return out
    }

    /// Waits (checking every half second) until `condition` holds, at most `timeout` s. - Returns: the seconds it took, nil if never.
    func waitFor(_ timeout: Double, _ condition: () -> Bool) -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < timeout {
            if condition() { return Date().timeIntervalSince(start) }
            usleep(500_000)
        }
        return nil
    }

    func node(_ name: String, _ url: String, plugins: [String] = ["null:results=1"], extra: [String] = ["--results-only"]) throws -> BackgroundCVHost {
        try BackgroundCVHost(["run", "--fleet", url, "--node", name] + plugins.flatMap { ["--plugin", $0] }
                             + ["--no-stdin-commands", "--metrics-interval", "0"] + extra, name: name, environment: AnalyticsTests.python)
    }

    /// A site command that must succeed.
    func site(_ url: String, _ args: [String]) throws {
        let r = try CVHostBinary.run(["fleet", "--fleet", url] + args, timeout: 30)
        #expect(r.exitCode == 0, "\(args): \(r.stderr)")
    }

    /// The line.crossed events of `input` in a node's stdout: (node, total in).
    func crossings(_ node: BackgroundCVHost, _ input: String) -> [(node: String, totalIn: Int)] {
        node.lines.compactMap { l in
            guard l["event"] as? String == "line.crossed", l["source"] as? String == input, let n = l["node"] as? String,
                  let total = (l["data"] as? [String: Any])?["total_in"] as? Int else { return nil }
            return (n, total)
        }
    }

    @Test("a site's track and line are set by the node running the input (by fleet); a line moved is applied there; its counts go on across a takeover")
    func rulesAndCounts() throws {
        let cluster = try NATSCluster()
        let url = "nats://\(cluster.hosts)/counts"
        // A box walks across the frame every 3 s (30 frames at 10 fps): it crosses the line once a lap.
        let walker = try AnalyticsTests.walker(lap: 30)
        try add(url, "door", "testsrc:320x240@10", plugins: ["walker"])
        try site(url, ["set-track", "walker"])
        try site(url, ["set-line", "gate=150,0 150,240:in=left,input=door"])
        let nodes = try ["a", "b"].map { try node($0, url, plugins: [walker], extra: []) }
        var owner = ""
        #expect(waitFor(60) { owner = owners(url)["door"] ?? ""; return !owner.isEmpty } != nil)
        let first = try #require(nodes.first { $0.stderr.contains("node \(owner) joined") })
        let other = try #require(nodes.first { $0 !== first })
        #expect(waitFor(30) { crossings(first, "door").count >= 2 } != nil, "\(first.stderr)")
        // The line moved: the node running the input applies it (an analytics.changed by the fleet).
        try site(url, ["set-line", "gate=160,0 160,240:in=left,input=door"])
        #expect(waitFor(15) {
            first.lines.contains { l in
                l["event"] as? String == "analytics.changed" && l["by"] as? String == "fleet" && l["name"] as? String == "gate"
                    && l["change"] as? String == "changed" && (l["settings"] as? [String: Any])?["points"].map { "\($0)".contains("160") } == true
            }
        } != nil, "\(first.stdout.suffix(3000))")
        // Its counts are in the store; the owner is killed; the next goes on from them.
        var kept = 0
        #expect(waitFor(20) {
            let json = (try? cluster.get(bucket: "cvhost-counts", key: "counts.door")) ?? nil
            let o = json.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let gate = ((o?["walker"] as? [String: Any])?["lines"] as? [String: Any])?["gate"] as? [String: Any]
            kept = ((gate?["labels"] as? [String: Any])?["person"] as? [String: Any])?["in"] as? Int ?? 0
            // The moved line's counts (those of its first place were set back when it moved).
            return kept >= 1 && gate?["points"].map { "\($0)".contains("160") } == true
        } != nil, "\(String(describing: try? cluster.get(bucket: "cvhost-counts", key: "counts.door")))")
        first.killNow()
        #expect(waitFor(Self.lease + 20) { !crossings(other, "door").isEmpty } != nil, "\(other.stderr)")
        let next = try #require(crossings(other, "door").first)
        #expect(next.totalIn >= kept + 1, "the next node counted from \(next.totalIn - 1), the store had \(kept): \(other.stderr)\n\(other.stdout.split(separator: "\n").filter { $0.contains("analytics.changed") || $0.contains("line.crossed") }.prefix(6).joined(separator: "\n"))")
    }

    func add(_ url: String, _ name: String, _ input: String, plugins: [String] = ["null"]) throws {
        let r = try CVHostBinary.run(["fleet", "--fleet", url, "add-input", name, input] + plugins.flatMap { ["--needs", $0] }, timeout: 30)
        #expect(r.exitCode == 0, "\(r.stderr)")
    }

    /// The results of each input in a node's stdout: (source, lease, ts).
    func results(_ node: BackgroundCVHost) -> [(source: String, lease: Int, ts: Double)] {
        node.lines.compactMap { l in
            guard l["event"] as? String == "result", let s = l["source"] as? String, let lease = l["lease"] as? Int, let ts = l["ts"] as? Double else { return nil }
            return (s, lease, ts)
        }
    }

    @Test("6 inputs on 3 nodes: 2/2/2, every input's results; a NATS server killed moves nothing; a SIGKILLed node's inputs go on elsewhere within the lease and 5 s, never run twice; a SIGTERMed node's at once; a node that joins gets its share, each input moved once")
    func spreadAndTakeover() throws {
        let cluster = try NATSCluster()
        let url = "nats://\(cluster.hosts)/takeover"
        // An RTSP camera of the tests' server (a node that takes it over connects anew), and test patterns.
        let video = try MediaFixtures.make("fleet-rtsp.mp4", ["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=5", "-t", "300", "-c:v", "libx264",
                                                              "-preset", "ultrafast", "-g", "10", "-pix_fmt", "yuv420p"])
        let camera = try TestServer("rtsp_server.py", ["--file", video])
        defer { camera.stop() }
        for i in 1...5 { try add(url, "cam\(i)", "testsrc:160x120@5") }
        try add(url, "rtsp", "rtsp://127.0.0.1:\(camera.port)/codes")
        let nodes = try ["a", "b", "c"].map { try node($0, url) }
        var spread: [String: String] = [:]
        let spreadIn = waitFor(90) {
            spread = owners(url)
            let counts = Dictionary(grouping: spread.values, by: { $0 }).mapValues(\.count)
            return spread.count == 6 && counts.count == 3 && counts.values.allSatisfy { $0 == 2 }
        }
        #expect(spreadIn != nil, "not spread 2/2/2 within 90 s: \(spread)\n\(nodes.map(\.stderr).joined(separator: "\n---\n"))")
        // Every input's results arrive, each line with its node and lease.
        #expect(waitFor(20) { Set(nodes.flatMap { results($0).map(\.source) }) == Set(spread.keys) } != nil,
                "\(Set(nodes.flatMap { results($0).map(\.source) }))")
        #expect(nodes.flatMap(\.lines).filter { $0["event"] as? String == "result" }.allSatisfy { $0["node"] is String && $0["lease"] is Int })

        // A NATS server goes: nothing stops, nothing moves; it comes back: nothing moves.
        let before = owners(url, streaming: false)
        cluster.servers[1].stop(signal: SIGKILL)
        usleep(6_000_000)
        #expect(owners(url, streaming: false) == before, "a NATS server's loss moved inputs: \(nodes.map(\.stderr).joined(separator: "\n---\n"))")
        try cluster.servers[1].start()
        usleep(4_000_000)
        #expect(owners(url, streaming: false) == before, "a NATS server's return moved inputs")

        // SIGKILL one node: its inputs go on elsewhere within the lease time and 5 s.
        let victim = nodes[0]
        let theirs = spread.filter { $0.value == "a" }.map(\.key)
        victim.killNow()
        let killedAt = Date().timeIntervalSince1970
        var after: [String: String] = [:]
        let takenIn = waitFor(Self.lease + 10) {
            after = owners(url)
            return theirs.allSatisfy { after[$0] != nil && after[$0] != "a" }
        }
        #expect(takenIn.map { $0 <= Self.lease + 5 } == true, "taken over in \(takenIn.map { String($0) } ?? "never"): \(after)")
        let survivors = Array(nodes[1...])
        #expect(waitFor(15) { theirs.allSatisfy { input in survivors.contains { results($0).contains { $0.source == input && $0.ts > killedAt } } } } != nil,
                "results of \(theirs) do not go on after the kill")
        // No input's results from two leases at once: each input's lines, by their frames' time, never go back to an earlier lease.
        for input in spread.keys {
            let lines = nodes.flatMap { results($0).filter { $0.source == input } }.sorted { $0.ts < $1.ts }
            let backwards = zip(lines, lines.dropFirst()).filter { $1.lease < $0.lease }
            #expect(backwards.isEmpty, "\(input): a later frame of an earlier lease: \(backwards.prefix(3))")
        }

        // SIGTERM another: its inputs move at once (not after the lease time).
        let leaving = nodes[1]
        let leavingOnes = owners(url).filter { $0.value == "b" }.map(\.key)
        leaving.stop()
        let movedIn = waitFor(Self.lease) { let o = owners(url); return leavingOnes.allSatisfy { o[$0] == "c" } }
        #expect(movedIn.map { $0 < Self.lease / 2 } == true, "a clean leave's inputs moved in \(movedIn.map { String($0) } ?? "never")")
        #expect(leaving.stderr.contains("given back to site takeover"), "\(leaving.stderr)")

        // A node joins the one left: the inputs rebalance, one at a time, each moved once (3/3).
        let joining = try node("d", url)
        var final: [String: String] = [:]
        #expect(waitFor(60) {
            final = owners(url)
            return final.count == 6 && final.values.filter { $0 == "d" }.count == 3
        } != nil, "\(final)\n\(nodes[2].stderr)")
        let moves = nodes[2].stderr.split(separator: "\n").filter { $0.contains("given to node d") }
        #expect(moves.count == 3 && Set(moves).count == 3, "\(moves)")
        joining.stop()
    }

    @Test("a node frozen past its lease (SIGSTOP) loses its inputs to another, and once it wakes writes no result for them")
    func frozenNode() throws {
        let cluster = try NATSCluster()
        let url = "nats://\(cluster.hosts)/frozen"
        for i in 1...2 { try add(url, "cam\(i)", "testsrc:160x120@5") }
        let a = try node("a", url), b = try node("b", url)
        var o: [String: String] = [:]
        #expect(waitFor(60) { o = owners(url); return Set(o.values) == ["a", "b"] } != nil, "\(o)")
        let frozenOnes = o.filter { $0.value == "a" }.map(\.key)
        a.signal(SIGSTOP)
        let stoppedAt = Date().timeIntervalSince1970
        #expect(waitFor(Self.lease + 10) { let now = owners(url); return frozenOnes.allSatisfy { now[$0] == "b" } } != nil)
        a.signal(SIGCONT)
        #expect(waitFor(10) { a.stderr.contains("is no longer this node's") } != nil, "\(a.stderr)")
        usleep(2_000_000)
        // Its lease lapsed (by its own clock) at most the lease time after the freeze: nothing of a
        // frame after that, though its capture threads ran on once it woke.
        let late = results(a).filter { frozenOnes.contains($0.source) && $0.ts > stoppedAt + Self.lease }
        #expect(late.isEmpty, "\(late.count) results written after the lease lapsed: \(late.prefix(3))")
        #expect(results(b).contains { frozenOnes.contains($0.source) && $0.ts > stoppedAt })
        _ = b
    }

    @Test("a malformed key another client wrote is refused in one line naming it; an input needing a plugin no node has waits; the node goes on")
    func badEntries() throws {
        let cluster = try NATSCluster()
        let url = "nats://\(cluster.hosts)/bad"
        try add(url, "good", "testsrc:160x120@5")
        try cluster.put(bucket: "cvhost-bad", key: "inputs.broken", value: "{not json")
        try cluster.put(bucket: "cvhost-bad", key: "inputs.empty", value: #"{"plugins":["null"]}"#)
        try add(url, "needs-barcode", "testsrc:160x120@5", plugins: ["barcode"])
        let port = freeLoopbackPort()
        let a = try node("a", url, extra: ["--results-only", "--http", "127.0.0.1:\(port)"])
        #expect(waitFor(30) { owners(url)["good"] == "a" } != nil, "\(a.stderr)")
        // GET /fleet: the site as the node sees it, each input with its node and that node's live view; /metrics: the inputs it owns.
        var fleet: [String: Any] = [:]
        #expect(waitFor(10) {
            fleet = ((try? LiveViewTests.http(port, "/fleet").body).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }) ?? [:]
            return (fleet["inputs"] as? [[String: Any]])?.first { $0["name"] as? String == "good" }?["state"] as? String == "streaming"
        } != nil, "\(fleet)")
        let listed = fleet["inputs"] as? [[String: Any]] ?? []
        #expect(fleet["site"] as? String == "bad" && fleet["node"] as? String == "a")
        #expect(listed.first { $0["name"] as? String == "good" }?["live_view"] as? String == "http://127.0.0.1:\(port)", "\(listed)")
        #expect(listed.first { $0["name"] as? String == "needs-barcode" }?["owner"] is NSNull, "\(listed)")
        #expect(!listed.contains { $0["name"] as? String == "broken" })
        let metrics = try LiveViewTests.http(port, "/metrics").body
        #expect(metrics.contains("cvhost_fleet_input_lease{source=\"good\",node=\"a\"}"), "\(metrics.prefix(2000))")
        // The site's page in a real browser: the site's inputs (not the malformed ones), the one running
        // linked to its node's live view on that input; the live view links to the page.
        let rows = "(() => { const r = [...document.querySelectorAll('#inputs tbody tr')].map(tr => [...tr.cells].map(c => c.textContent).join('|')); "
            + "const a = document.querySelector('#inputs tbody a'); return r.length == 2 && a ? [a.getAttribute('href'), r.join(';')] : null })()"
        let shown = PageProbe.value("http://127.0.0.1:\(port)/site.html", rows, as: [String].self) ?? []
        #expect(shown.count == 2 && shown[0] == "http://127.0.0.1:\(port)/?source=good" && shown[1].contains("needs-barcode|—|waiting for a node")
                && shown[1].contains("good|a|streaming"), "\(shown)")
        let linked = "(() => { const s = document.getElementById('site-link'); return s && !s.hidden ? s.querySelector('a').getAttribute('href') : null })()"
        #expect(PageProbe.value("http://127.0.0.1:\(port)/", linked, as: String.self) == "site.html")
        #expect(a.stderr.contains("key inputs.broken") && a.stderr.contains("is not an input"), "\(a.stderr)")
        #expect(a.stderr.contains("key inputs.empty") && a.stderr.contains("one of \"input\""), "\(a.stderr)")
        #expect(a.stderr.components(separatedBy: "inputs.broken").count == 2, "said more than once: \(a.stderr)")
        let all = status(url)["inputs"] as? [[String: Any]] ?? []
        #expect(all.first { $0["name"] as? String == "needs-barcode" }?["owner"] is NSNull, "\(all)")
        let text = try CVHostBinary.run(["fleet", "--fleet", url, "status"])
        #expect(text.exitCode == 0 && text.stdout.contains("waiting for a node") && text.stdout.contains("broken"), "\(text.stdout)")
        // Removed from the site: its node stops it.
        let removed = try CVHostBinary.run(["fleet", "--fleet", url, "remove-input", "good"])
        #expect(removed.exitCode == 0, "\(removed.stderr)")
        #expect(waitFor(10) { a.stderr.contains("input good was removed from the site") && a.stderr.contains("input good removed") } != nil, "\(a.stderr)")
        a.stop()
        #expect(!a.stderr.contains("Fatal") && !a.stderr.contains("crash"))

        // A store of a newer format: said; no input taken.
        let future = "nats://\(cluster.hosts)/future"
        try add(future, "cam", "testsrc:160x120@5")
        try cluster.put(bucket: "cvhost-future", key: "format", value: #"{"format":9}"#)
        let old = try node("old", future)
        #expect(waitFor(20) { old.stderr.contains("the site's store is of format 9, newer than this cvhost's (1): upgrade cvhost on this node") } != nil,
                "\(old.stderr)")
        usleep(4_000_000)
        #expect(!old.stderr.contains("taken"), "\(old.stderr)")
        let refused = try CVHostBinary.run(["fleet", "--fleet", future, "status"])
        #expect(refused.exitCode == 2 && refused.stderr.contains("newer than this cvhost's"), "\(refused.stderr)")
        old.stop()
    }

    @Test("a store out of reach at start: said, waited for; the node's own inputs run meanwhile; SIGTERM ends it (exit 0)")
    func unreachableStore() throws {
        let port = freeLoopbackPort()
        let http = freeLoopbackPort()
        var fleet = ""
        let r = try CVHostBinary.run(["run", "--fleet", "nats://127.0.0.1:\(port)/away", "--plugin", "null:results=1", "--input", "own=testsrc:64x48@10",
                                      "--results-only", "--metrics-interval", "0", "--http", "127.0.0.1:\(http)"], timeout: 60, withStdin: false) { run in
            guard run.waitForStderr("the site's store cannot be reached"), run.wait(until: { $0.contains("\"source\":\"own\"") }) else { return }
            fleet = (try? LiveViewTests.http(http, "/fleet")).map { "\($0.status) \($0.body)" } ?? ""
            kill(run.pid, SIGTERM)
        }
        #expect(fleet.hasPrefix("503") && fleet.contains("has not reached its site's store yet"), "\(fleet)")
        #expect(r.exitCode == 0 && !r.timedOut, "\(r.exitCode): \(r.stderr)")
        #expect(r.stderr.components(separatedBy: "cannot be reached").count == 2, "said once: \(r.stderr)")
        #expect(r.stdout.contains("\"source\":\"own\"") && !r.stdout.contains("\"node\""), "a local input carries no lease")
    }

    @Test("cvhost fleet's refusals: a bad URL or name (64), a name taken or missing (2), no server (5); --node without --fleet")
    func refusals() throws {
        let server = try NATSServer()
        let url = "nats://127.0.0.1:\(server.port)/refusals"
        let cases: [([String], Int32, String)] = [
            (["fleet", "--fleet", "http://x/site", "status"], 64, "--fleet is nats://HOST"),
            (["fleet", "--fleet", "nats://127.0.0.1:\(server.port)", "status"], 64, "names no site"),
            (["fleet", "--fleet", "nats://127.0.0.1/bad.site", "status"], 64, "the site's name"),
            (["fleet", "--fleet", url, "add-input", "a..b", "testsrc"], 64, "an input's name"),
            (["fleet", "--fleet", url, "add-input", "x"], 64, "give INPUT"),
            (["fleet", "--fleet", url, "remove-input", "nothing"], 2, "has no input called nothing"),
            (["fleet", "--fleet", "nats://127.0.0.1:\(freeLoopbackPort())/s", "--timeout", "1", "status"], 5, "cannot be reached"),
            (["run", "--plugin", "null", "--input", "testsrc", "--node", "a"], 64, "--node names this run in its site: it needs --fleet"),
            (["run", "--plugin", "null", "--fleet", "nats://h/s", "--node", "a b"], 64, "a node's name is"),
        ]
        for (args, code, text) in cases {
            let r = try CVHostBinary.run(args, timeout: 30)
            #expect(r.exitCode == code && r.stderr.contains(text) && r.stderr.split(separator: "\n").count == 1, "\(args): \(r.exitCode) \(r.stderr)")
        }
        try add(url, "one", "testsrc")
        let again = try CVHostBinary.run(["fleet", "--fleet", url, "add-input", "one", "testsrc"])
        #expect(again.exitCode == 2 && again.stderr.contains("has an input called one already"), "\(again.stderr)")
        let replaced = try CVHostBinary.run(["fleet", "--fleet", url, "add-input", "one", "testsrc:64x48", "--replace"])
        #expect(replaced.exitCode == 0, "\(replaced.stderr)")
        // A password in the URL is never shown.
        let secret = try CVHostBinary.run(["fleet", "--fleet", "nats://u:hunter2@127.0.0.1:\(freeLoopbackPort())/s", "--timeout", "1", "status"])
        #expect(secret.exitCode == 5 && !secret.stderr.contains("hunter2") && secret.stderr.contains("u:***@"), "\(secret.stderr)")
    }
}
