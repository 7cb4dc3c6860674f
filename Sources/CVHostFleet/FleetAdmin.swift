import CVHostCore
import Foundation

/// `cvhost fleet`: a site's inputs, zones, lines and tracks given and taken away, and the site as it is now, from any
/// machine that reaches its NATS servers. What it writes is what any key-value client may
/// (`SiteStore`): the nodes see it through their watchers and act on it.
public final class FleetAdmin {
    /// Why a command could not be done, and its exit code.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public let exitCode: Int32
        /// The store refused the change (a name taken, none of that name).
        public static let refused: Int32 = 2
        /// The site's store cannot be reached.
        public static let unreachable: Int32 = 5
    }

    private let store: SiteStore

    /// Connects to the site (at most `timeout` seconds) and opens (or makes) its buckets.
    public init(_ address: FleetAddress, timeout: Double) throws(Failure) {
        do {
            guard let c = try SiteConnection(address, name: "cvhost fleet", timeout: timeout) else {
                throw Failure(description: "the site's store cannot be reached: no server of \(address.shown) answered within \(timeout) s", exitCode: Failure.unreachable)
            }
            store = try SiteStore(c)
            if let problem = try store.checkFormat() { throw Failure(description: problem, exitCode: Failure.refused) }
        } catch let e as StoreError {
            throw Failure(description: "the site's store cannot be used: \(e)", exitCode: Failure.unreachable)
        } catch let f as Failure {
            throw f
        } catch {
            throw Failure(description: "\(error)", exitCode: 1)
        }
    }

    /// Gives the site an input (refused when one of that name is there, unless `replace`).
    /// - Returns: the entry's revision.
    @discardableResult
    public func addInput(_ name: String, _ input: SiteInput, replace: Bool) throws(Failure) -> UInt64 {
        guard SiteStore.isKeyPart(name), name.utf8.count <= 64 else {
            throw Failure(description: "an input's name is 1 to 64 letters, digits, _, - or . (no empty part between dots): '\(name)'", exitCode: 64)
        }
        if let problem = input.problem { throw Failure(description: problem, exitCode: 64) }
        let key = SiteStore.inputPrefix + name
        do {
            return replace ? try store.desired.put(key, SiteStore.encode(input)) : try store.desired.create(key, SiteStore.encode(input))
        } catch where !error.isUnreachable && !replace {
            throw Failure(description: "the site \(store.connection.address.site) has an input called \(name) already: remove it first, or --replace", exitCode: Failure.refused)
        } catch {
            throw Failure(description: "\(error)", exitCode: Failure.unreachable)
        }
    }

    /// Takes an input away (its node stops it), with its kept counts.
    public func removeInput(_ name: String) throws(Failure) {
        try remove(SiteStore.inputPrefix + name, "input", name)
        try? store.desired.delete(SiteStore.countsPrefix + name)
    }

    /// Sets a zone, line or track of the site, written as `--zone`, `--line` or `--track` takes it
    /// (a zone or line with `input=`: the input whose node sets it). - Returns: its name and revision.
    @discardableResult
    public func setRule(_ kind: String, _ text: String) throws(Failure) -> (name: String, revision: UInt64) {
        guard let k = SiteRuleKind(rawValue: kind) else { throw Failure(description: "no such rule: \(kind)", exitCode: 64) }
        let parsed: (name: String, input: String?, json: [UInt8])
        do { parsed = try SiteRule.parse(k, text) } catch { throw Failure(description: error.description, exitCode: 64) }
        guard k == .track || parsed.input != nil else {
            throw Failure(description: "a site's \(kind) names the input it watches (input=NAME): its node sets it", exitCode: 64)
        }
        guard SiteStore.isKeyPart(parsed.name) else {
            throw Failure(description: "a site's \(kind)'s name is letters, digits, _, - or . (no empty part between dots): '\(parsed.name)'", exitCode: 64)
        }
        do {
            return (parsed.name, try store.desired.put(k.prefix + parsed.name, parsed.json))
        } catch {
            throw Failure(description: "\(error)", exitCode: Failure.unreachable)
        }
    }

    /// Takes a zone, line or track away from the site.
    public func removeRule(_ kind: String, _ name: String) throws(Failure) {
        guard let k = SiteRuleKind(rawValue: kind) else { throw Failure(description: "no such rule: \(kind)", exitCode: 64) }
        try remove(k.prefix + name, kind, name)
    }

    private func remove(_ key: String, _ what: String, _ name: String) throws(Failure) {
        do {
            guard try store.desired.get(key) != nil else {
                throw Failure(description: "the site \(store.connection.address.site) has no \(what) called \(name)", exitCode: Failure.refused)
            }
            try store.desired.delete(key)
        } catch let e as StoreError {
            throw Failure(description: "\(e)", exitCode: Failure.unreachable)
        } catch let f as Failure {
            throw f
        } catch {
            throw Failure(description: "\(error)", exitCode: 1)
        }
    }

    /// The site now: its inputs (each with its owner and that node's word on its health) and nodes.
    public func status() throws(Failure) -> SiteStatus {
        do {
            let inputs = try store.desired.all().filter { $0.key.hasPrefix(SiteStore.inputPrefix) }
            let nodes = try store.nodes.all().compactMap { try? JSONDecoder().decode(SiteNode.self, from: Data($0.value)) }
            var leases: [String: (node: String, revision: UInt64)] = [:]
            for e in try store.leases.all() {
                if let l = try? JSONDecoder().decode(SiteLease.self, from: Data(e.value)) { leases[e.key] = (l.node, e.revision) }
            }
            return SiteStatus(site: store.connection.address.site, leaseSeconds: store.ttl, nodes: nodes, inputs: inputs.map { e in
                let value = try? JSONDecoder().decode(SiteInput.self, from: Data(e.value))
                return (String(e.key.dropFirst(SiteStore.inputPrefix.count)), value, value == nil ? "not an input (malformed)" : value?.problem)
            }, leases: leases)
        } catch {
            throw Failure(description: "\(error)", exitCode: Failure.unreachable)
        }
    }
}

/// `cvhost fleet status`: what the site's store says now.
public struct SiteStatus {
    public let site: String
    public let leaseSeconds: Double
    public let nodes: [SiteNode]
    public let inputs: [Input]

    /// The site as told: its nodes' heartbeats, its inputs (each, or why it is not one) and leases.
    init(site: String, leaseSeconds: Double, nodes: [SiteNode], inputs: [(name: String, entry: SiteInput?, problem: String?)],
         leases: [String: (node: String, revision: UInt64)]) {
        self.site = site
        self.leaseSeconds = leaseSeconds
        self.nodes = nodes.sorted { $0.node < $1.node }
        self.inputs = inputs.sorted { $0.name < $1.name }.map { i in
            let lease = leases[i.name]
            let owner = lease.flatMap { l in nodes.first { $0.node == l.node } }
            return Input(name: i.name, entry: i.entry, problem: i.problem, owner: lease?.node, leaseRevision: lease?.revision,
                         health: owner?.inputs[i.name], liveView: owner?.http, refusedBy: nodes.compactMap { n in n.refused?[i.name].map { (n.node, $0) } })
        }
    }

    public struct Input {
        public let name: String
        public let entry: SiteInput?
        public let problem: String?
        public let owner: String?
        public let leaseRevision: UInt64?
        public let health: SiteNode.InputState?
        /// The owner's live view (its --http), where the input is watched.
        public let liveView: String?
        public let refusedBy: [(node: String, why: String)]
    }

    /// As JSON, for programs (`--json`).
    public var json: [String: Any] {
        [
            "site": site, "lease_seconds": leaseSeconds,
            "nodes": nodes.map { n -> [String: Any] in
                var o: [String: Any] = ["node": n.node, "plugins": n.plugins, "capacity": n.capacity, "inputs": n.inputs.keys.sorted(), "version": n.version]
                if let h = n.http { o["http"] = h }
                return o
            },
            "inputs": inputs.map { i -> [String: Any] in
                var o: [String: Any] = ["name": i.name, "owner": i.owner as Any? ?? NSNull(), "lease": i.leaseRevision as Any? ?? NSNull()]
                if let e = i.entry {
                    if let t = e.input { o["input"] = PasswordRedaction.redact(t) }
                    if let d = e.device { o["device"] = d }
                    if let p = e.plugins { o["plugins"] = p }
                }
                if let p = i.problem { o["problem"] = p }
                if let h = i.health {
                    o["state"] = h.state
                    if let f = h.fps { o["fps"] = f }
                    if let a = h.last_frame_age { o["last_frame_age"] = a }
                }
                if let v = i.liveView { o["live_view"] = v }
                if !i.refusedBy.isEmpty { o["refused"] = Dictionary(i.refusedBy.map { ($0.node, $0.why) }, uniquingKeysWith: { a, _ in a }) }
                return o
            },
        ]
    }

    /// As a table, for people.
    public var text: String {
        var lines = ["site \(site): \(nodes.count) node\(nodes.count == 1 ? "" : "s"), \(inputs.count) input\(inputs.count == 1 ? "" : "s"), "
                     + "\(inputs.filter { $0.owner != nil }.count) running (leases of \(Int(leaseSeconds)) s)"]
        lines.append("")
        lines.append(Self.row(["NODE", "INPUTS", "CAPACITY", "PLUGINS", "LIVE VIEW"]))
        for n in nodes {
            lines.append(Self.row([n.node, String(n.inputs.count), String(n.capacity), n.plugins.joined(separator: ","), n.http ?? "-"]))
        }
        lines.append("")
        lines.append(Self.row(["INPUT", "NODE", "STATE", "FPS", "LAST FRAME", "SOURCE"]))
        for i in inputs {
            let source = i.entry.map { $0.input.map(PasswordRedaction.redact) ?? $0.device ?? "" } ?? "-"
            let state = i.problem.map { "refused: " + $0 } ?? i.health?.state ?? (i.owner == nil
                ? (i.refusedBy.isEmpty ? "waiting for a node" : "refused by " + i.refusedBy.map { "\($0.node) (\($0.why))" }.joined(separator: ", ")) : "starting")
            lines.append(Self.row([i.name, i.owner ?? "-", state, i.health?.fps.map { String(format: "%.1f", $0) } ?? "-",
                                   i.health?.last_frame_age.map { String(format: "%.1f s", $0) } ?? "-", source]))
        }
        return lines.joined(separator: "\n")
    }

    private static func row(_ cells: [String]) -> String {
        let widths = [14, 12, 10, 6, 11]
        return cells.enumerated().map { i, c in i < widths.count ? c.padding(toLength: max(widths[i], c.count + 1), withPad: " ", startingAt: 0) : c }.joined()
    }
}
