@testable import CVHostFleet
import Testing

/// Where a site's inputs go (SiteView.assignment, Rendezvous) and how a site is written
/// (FleetAddress): pure functions, no server.
@Suite("A site's inputs placed on its nodes; the site's address")
struct PlacementTests {
    static let second: UInt64 = 1_000_000_000
    static let ttl = 10 * second

    /// A view of `nodes` (name, plugins, capacity) all live at time `now`, and `inputs` (name, plugins).
    static func view(nodes: [(String, [String], Int)], inputs: [(String, [String]?)], now: UInt64 = 100 * second) -> SiteView {
        var v = SiteView()
        for (n, plugins, capacity) in nodes {
            v.nodes[n] = SiteView.NodeSeen(entry: SiteNode(node: n, plugins: plugins, capacity: capacity, inputs: [:], refused: nil, http: nil, version: "0", format: 1),
                                           seenNs: now, firstSeenNs: 0)
        }
        for (i, (name, plugins)) in inputs.enumerated() {
            v.inputs[name] = SiteView.InputSeen(value: SiteInput(input: "testsrc", device: nil, plugins: plugins), revision: UInt64(i + 1))
        }
        return v
    }

    static func assign(_ v: SiteView, now: UInt64 = 100 * second, me: String = "a") -> [String: String] {
        v.assignment(now: now, ttlNs: ttl, wanting: me) { v.nodes[$0]?.entry.capacity ?? 0 }
    }

    static func loads(_ a: [String: String]) -> [String: Int] {
        Dictionary(grouping: a.values, by: { $0 }).mapValues(\.count)
    }

    @Test("inputs spread evenly: no node above its fair share, whatever the names (200 sites of 2-5 nodes and 1-24 inputs)")
    func evenSpread() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let nodeCount = Int.random(in: 2...5, using: &rng), inputCount = Int.random(in: 1...24, using: &rng)
            let nodes = (0..<nodeCount).map { ("node-\(Int.random(in: 0...99999, using: &rng))-\($0)", ["null"], 32) }
            let inputs = (0..<inputCount).map { ("cam\(Int.random(in: 0...99999, using: &rng))-\($0)", nil as [String]?) }
            let a = Self.assign(Self.view(nodes: nodes, inputs: inputs), me: nodes[0].0)
            #expect(a.count == inputCount)
            let share = (inputCount + nodeCount - 1) / nodeCount
            #expect(Self.loads(a).values.allSatisfy { $0 <= share }, "\(Self.loads(a))")
        }
        let six = Self.assign(Self.view(nodes: [("a", ["null"], 32), ("b", ["null"], 32), ("c", ["null"], 32)], inputs: (1...6).map { ("cam\($0)", nil) }))
        #expect(Self.loads(six) == ["a": 2, "b": 2, "c": 2])
    }

    @Test("every node computes the same placement from the same view")
    func sameEverywhere() {
        let v = Self.view(nodes: [("a", ["null"], 32), ("b", ["null"], 32), ("c", ["null"], 32)], inputs: (1...9).map { ("cam\($0)", nil) })
        #expect(Self.assign(v, me: "a") == Self.assign(v, me: "b"))
        #expect(Self.assign(v, me: "b") == Self.assign(v, me: "c"))
    }

    @Test("an input goes only to a node with its plugins and room; none has them: it waits (no owner)")
    func pluginsAndRoom() {
        let v = Self.view(nodes: [("a", ["null"], 32), ("b", ["null", "detect"], 1)],
                          inputs: [("d1", ["detect"]), ("d2", ["detect"]), ("n1", ["null"]), ("bc", ["barcode"])])
        let a = Self.assign(v)
        #expect(a["d1"] == "b" || a["d2"] == "b")
        #expect(a["d1"] == nil || a["d2"] == nil, "b has room for one: \(a)")
        #expect(a["bc"] == nil)
        #expect(a["n1"] == "a", "b is full: \(a)")
    }

    @Test("a node whose heartbeat was not seen for 0.6 TTL is not placed on; this node always is")
    func liveNodes() {
        let now = 100 * Self.second
        var v = Self.view(nodes: [("a", ["null"], 32), ("b", ["null"], 32)], inputs: (1...4).map { ("cam\($0)", nil) }, now: now)
        v.nodes["b"]!.seenNs = now - 7 * Self.second
        #expect(Set(Self.assign(v, now: now).values) == ["a"])
        v.nodes["a"]!.seenNs = now - 60 * Self.second
        #expect(Set(Self.assign(v, now: now, me: "a").values) == ["a"])
    }

    @Test("rendezvous: a node's going moves only the inputs it was first for; the order is the names' alone")
    func rendezvous() {
        let nodes = ["a", "b", "c", "d"]
        for i in 0..<100 {
            let input = "cam\(i)"
            let full = Rendezvous.order(nodes, for: input)
            let without = Rendezvous.order(nodes.filter { $0 != "c" }, for: input)
            if full.first != "c" { #expect(without.first == full.first) }
            #expect(Rendezvous.order(nodes.reversed(), for: input) == full)
        }
    }

    @Test("the site's address: servers (default port 4222, IPv6), the site, credentials never shown; refusals name the option")
    func address() throws {
        let a = try FleetAddress(parsing: "nats://n1,n2:4223,[::1]:4224/depot")
        #expect(a.servers == ["nats://n1:4222", "nats://n2:4223", "nats://[::1]:4224"])
        #expect(a.site == "depot")
        let secret = try FleetAddress(parsing: "nats://user:p%40ss@n1/depot")
        #expect(secret.user == "user" && secret.password == "p@ss" && secret.shown == "nats://user:***@n1:4222/depot")
        let token = try FleetAddress(parsing: "nats://s3cret@n1/depot")
        #expect(token.token == "s3cret" && !token.shown.contains("s3cret"))
        for bad in ["mqtt://n1/depot", "nats://n1", "nats://n1/", "nats://n1/a.b", "nats://n1:0/x", "nats://n1:99999/x", "nats://,n1/x", "nats://[::1/x"] {
            #expect(throws: FleetAddress.Problem.self, "\(bad)") { try FleetAddress(parsing: bad) }
        }
        #expect(FleetAddress.nodeName(host: "gate-1.example.lan") == "gate-1")
        #expect(FleetAddress.nodeName(host: "weird_h@st") == "weird_h-st")
    }
}
