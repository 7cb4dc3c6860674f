import CVHostCore

/// What a node knows of its site, from the store's watchers: the inputs given to it, the live
/// nodes (heartbeats seen within 0.6 TTL), the leases; and the order in which nodes should take an
/// input (`able`) and where each input belongs (`assignment`). Kept by the node's loop thread alone.
struct SiteView {
    struct InputSeen {
        let value: SiteInput
        let revision: UInt64
    }

    struct NodeSeen {
        var entry: SiteNode
        var seenNs: UInt64
        /// When it was first seen (this time round): inputs move to a node only once it has settled.
        let firstSeenNs: UInt64
    }

    struct LeaseSeen {
        let node: String
        let revision: UInt64
        let seenNs: UInt64
    }

    struct RuleSeen {
        let rule: SiteRule
        let revision: UInt64
    }

    var inputs: [String: InputSeen] = [:]
    /// The site's zones, lines and tracks, by key (`lines.gate`).
    var rules: [String: RuleSeen] = [:]
    var nodes: [String: NodeSeen] = [:]
    var leases: [String: LeaseSeen] = [:]
    /// Since when an input has been seen without a lease.
    var freeSince: [String: UInt64] = [:]

    /// A change of `cvhost-SITE`: an input given, changed or taken away (`format` is read at the start).
    mutating func desired(_ e: KeyValueBucket.Entry, now: UInt64, said: (String) -> Void) {
        if let (kind, name) = SiteRuleKind.of(key: e.key) {
            if e.deleted {
                rules[e.key] = nil
                return
            }
            do {
                rules[e.key] = RuleSeen(rule: try SiteRule(kind, name: name, value: e.value, key: e.key, revision: e.revision), revision: e.revision)
            } catch {
                said(error.description)
            }
            return
        }
        guard e.key.hasPrefix(SiteStore.inputPrefix) else { return }
        let name = String(e.key.dropFirst(SiteStore.inputPrefix.count))
        if e.deleted {
            inputs[name] = nil
            return
        }
        switch SiteStore.decode(SiteInput.self, e, in: "the site's bucket", what: "an input ({\"input\":...} or {\"device\":...})") {
        case .success(let input):
            if let problem = input.problem {
                said("the site's bucket key \(e.key) (revision \(e.revision)) is not an input: \(problem); ignored until it is written anew")
            } else if !SiteStore.isKeyPart(name) {
                said("the site's bucket key \(e.key): an input's name is letters, digits, _, - or ., without an empty part between dots; ignored")
            } else {
                inputs[name] = InputSeen(value: input, revision: e.revision)
            }
        case .failure(let m):
            // The input as it was goes on (if it was), until a good value comes.
            said(m.description)
        }
    }

    /// A heartbeat, or a node gone (deleted: it left).
    mutating func node(_ e: KeyValueBucket.Entry, now: UInt64, ttlNs: UInt64, said: (String) -> Void) {
        if e.deleted {
            nodes[e.key] = nil
            return
        }
        switch SiteStore.decode(SiteNode.self, e, in: "the nodes' bucket", what: "a node's heartbeat") {
        case .success(let n): sawNode(e.key, n, now: now, ttlNs: ttlNs)
        case .failure(let m): said(m.description)
        }
    }

    mutating func sawSelf(_ name: String, _ n: SiteNode, now: UInt64, ttlNs: UInt64) {
        sawNode(name, n, now: now, ttlNs: ttlNs)
    }

    /// A node seen again after it was taken for dead joins anew (it settles before inputs move to it).
    private mutating func sawNode(_ name: String, _ n: SiteNode, now: UInt64, ttlNs: UInt64) {
        let earlier = nodes[name].flatMap { now <= $0.seenNs + Self.liveNs(ttlNs) ? $0.firstSeenNs : nil }
        nodes[name] = NodeSeen(entry: n, seenNs: now, firstSeenNs: earlier ?? now)
    }

    /// A lease taken or renewed, or given back (deleted).
    mutating func lease(_ e: KeyValueBucket.Entry, now: UInt64, said: (String) -> Void) {
        if e.deleted {
            leases[e.key] = nil
            freeSince[e.key] = now
            return
        }
        switch SiteStore.decode(SiteLease.self, e, in: "the leases' bucket", what: "a lease ({\"node\":NAME})") {
        case .success(let l):
            leases[e.key] = LeaseSeen(node: l.node, revision: e.revision, seenNs: now)
            freeSince[e.key] = nil
        case .failure(let m):
            // A lease that is no lease is still a key: it lapses with the TTL, as any other.
            leases[e.key] = LeaseSeen(node: "?", revision: e.revision, seenNs: now)
            said(m.description)
        }
    }

    /// No lease of the input has been seen written within the TTL: it lapsed (or was never taken).
    mutating func isFree(_ input: String, now: UInt64, ttlNs: UInt64) -> Bool {
        guard let l = leases[input] else { return true }
        guard now > l.seenNs + ttlNs else { return false }
        leases[input] = nil
        freeSince[input] = now
        return true
    }

    /// A node is live while its heartbeat (every quarter TTL) was seen within 0.6 TTL: one that died
    /// is taken for dead before its leases lapse, so that they go where the live nodes place them.
    static func liveNs(_ ttlNs: UInt64) -> UInt64 { ttlNs / 10 * 6 }

    /// The live nodes that can run the input (its plugins, not having refused it), best placed
    /// first (Rendezvous). `wanting` (this node) is counted live.
    func able(for input: String, _ value: SiteInput, now: UInt64, ttlNs: UInt64, wanting: String) -> [String] {
        let able = nodes.filter { name, n in
            guard name == wanting || now <= n.seenNs + Self.liveNs(ttlNs) else { return false }
            return (value.plugins ?? []).allSatisfy(n.entry.plugins.contains) && n.entry.refused?[input] == nil
        }
        return Rendezvous.order(Array(able.keys), for: input)
    }

    /// Which node each input should be on: every input, in name order, goes to the first node of its
    /// order (`able`) that has fewer than its fair share (the inputs over the live nodes, rounded
    /// up) and room (its capacity); failing that, to the first with room. Every node computes the
    /// same from the same view, and the inputs spread evenly (rendezvous alone would not: 6 inputs
    /// on 3 nodes fall 3/2/1 as often as 2/2/2), while a node's joining or leaving moves about its share.
    func assignment(now: UInt64, ttlNs: UInt64, wanting: String, capacityOf: (String) -> Int) -> [String: String] {
        let live = nodes.keys.filter { $0 == wanting || now <= nodes[$0]!.seenNs + Self.liveNs(ttlNs) }
        guard !live.isEmpty, !inputs.isEmpty else { return [:] }
        let share = (inputs.count + live.count - 1) / live.count
        var load: [String: Int] = [:]
        var out: [String: String] = [:]
        for input in inputs.keys.sorted() {
            let order = able(for: input, inputs[input]!.value, now: now, ttlNs: ttlNs, wanting: wanting)
            let chosen = order.first { load[$0, default: 0] < min(share, capacityOf($0)) } ?? order.first { load[$0, default: 0] < capacityOf($0) }
            if let chosen {
                out[input] = chosen
                load[chosen, default: 0] += 1
            }
        }
        return out
    }
}
