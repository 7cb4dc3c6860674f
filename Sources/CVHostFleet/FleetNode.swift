import CVHostAnalytics
import CVHostCore
import CVHostLines
import CVHostRun
import Dispatch
import Foundation

/// `cvhost run --fleet nats://.../SITE --node NAME`: this run as one node of a site. The site's
/// inputs are in its store (`SiteStore`); the node takes those it should run by lease, runs them
/// through the run's own commands (`add_input`, `change_input`, `remove_input`, as HTTP's and
/// stdin's are: each an `input.added` ... `by:"fleet"`), keeps its leases, and gives them back.
///
/// One thread talks to the store (a tick every quarter second): it reads the site's changes
/// (watchers), writes the node's heartbeat and renews its leases every TTL/4, and decides what to
/// take and give (`SiteView.assignment`). Inputs are opened and stopped on a queue of their own each, so that
/// an input slow to open holds up no lease's renewal.
///
/// The promises:
/// - A lease is renewed with a compare-and-set on its last revision: only its holder can renew it.
/// - A node that could not renew stops writing an input's results before its lease can have lapsed
///   in the store (`SourceLeases`: its own monotonic clock, from the time it sent its last renewal
///   that succeeded, less a margin), and stops the input: cut off or frozen (SIGSTOP), it never
///   writes results while another node may hold the lease.
/// - A lease that lapsed (its node died) is taken by the next node in the input's order within a
///   second a place in that order, after the TTL: takeover within TTL + 1-3 s, plus the opening.
/// - Leaving (the run stopped) gives every lease back at once, once its input has stopped.
public final class FleetNode: @unchecked Sendable {
    // @unchecked Sendable: `view`, `mine` and the timers are the loop thread's alone; what the
    // input queues report is in `applied` (Locked).
    public let address: FleetAddress
    public let name: String
    /// The run's plugins' names, once it runs (the node takes no input before).
    var plugins: [String] = []
    private let capacity: Int
    private let http: String?
    let run: HostRun

    private var store: SiteStore?
    private var watchers: (desired: KeyValueWatcher, nodes: KeyValueWatcher, leases: KeyValueWatcher)?
    var view = SiteView()
    var mine: [String: Held] = [:]
    /// Inputs this node could not open, until when it does not try them again, and why.
    private var refused: [String: (untilNs: UInt64, why: String)] = [:]
    private var queues: [String: DispatchQueue] = [:]
    private var nextHeartbeatNs: UInt64 = 0
    private var nextRebalanceNs: UInt64 = 0
    private var joinedNs: UInt64 = 0
    private var formatProblem: String?
    /// When this node's heartbeat was last written, and last seen come back through the nodes'
    /// watcher: a watcher that stopped giving changes (its server went) is seen so, and made anew.
    var lastPutNs: UInt64 = 0
    private var lastEchoNs: UInt64 = 0
    /// The input this node would give to another, to which node, since when: given only once the
    /// same move has been wanted a while (a view half-updated wants moves it would not once whole).
    private var wantedMove: (input: String, to: String, sinceNs: UInt64)?
    /// What was said once and not again until it changes (a store out of reach, a malformed key).
    private var said: Set<String> = []

    /// What the input queues report to the loop: an input that could not be added, and why.
    private let applied = Locked<[String: String]>([:])
    /// The site's zones, lines and tracks set on this node, by key, at the revision set.
    var appliedRules: [String: SiteView.RuleSeen] = [:]
    /// Inputs just taken, and the counts the store kept of them, to go on from once their rules are set.
    var pendingCounts: [String: [String: CountTotals]] = [:]
    /// Inputs whose counts go on from the store's (their queue did it): only theirs are written back.
    let carried = Locked<Set<String>>([])
    /// The counts last written to the store, by input.
    var writtenCounts: [String: [String: CountTotals]] = [:]
    private let wake = ConditionLock()
    private let state = Locked(LoopState.running)
    private let left = DispatchSemaphore(value: 0)

    private enum LoopState { case running, leaving, done }

    /// An input this node holds.
    struct Held {
        var lease: UInt64
        /// The lease's revision when taken: lines carry it.
        let taken: UInt64
        /// The input's entry revision the node runs.
        var entry: UInt64
        var nextRenewNs: UInt64
        var validUntilNs: UInt64
    }

    /// - Parameters:
    ///   - capacity: the most inputs it takes from the site.
    ///   - http: its live view's address, for the site's view of it.
    public init(_ address: FleetAddress, node: String, capacity: Int, http: String?, run: HostRun) {
        self.address = address
        self.name = node
        self.capacity = capacity
        self.http = http
        self.run = run
    }

    /// The site as this node sees it (GET /fleet), made anew with each heartbeat.
    private let published = Locked<String?>(nil)

    /// Starts the node's thread; the run gives its inputs back when they have stopped.
    public func start() {
        // Weak: the run holds this closure, and the node holds the run (the loop's thread keeps the node).
        run.whenInputsStopped { [weak self] in self?.leave() }
        run.serveFleet { [published] in
            published.withLock { $0 }.map { (200, $0) } ?? (503, #"{"error":"this node has not reached its site's store yet"}"#)
        }
        let t = Thread { [self] in loop() }
        t.name = "cvhost-fleet"
        t.start()
    }

    /// Gives every lease back and takes the node out of the site, waiting at most 3 s: the run's
    /// inputs have stopped.
    public func leave() {
        let waits = state.withLock { s -> Bool in
            guard s == .running else { return false }
            s = .leaving
            return true
        }
        guard waits else { return }
        wake.withLock { wake.broadcast() }
        _ = left.wait(timeout: .now() + 3)
    }

    // MARK: - The loop

    private var timing: SiteTiming { SiteTiming(ttl: store?.ttl ?? 10) }

    private func loop() {
        defer {
            state.withLock { $0 = .done }
            left.signal()
        }
        guard connect() else { return }
        while state.withLock({ $0 }) == .running {
            tick()
            wake.withLock { _ = wake.wait(untilMonotonicNs: HostClock.monotonicNs() + 250_000_000) }
        }
        giveBack()
    }

    /// Connects, opens the site's buckets and watches them, trying again every 2 s (said once) until
    /// it can or the node leaves. - Returns: false when the node left first.
    private func connect() -> Bool {
        var lastProblem: String?
        while state.withLock({ $0 }) == .running {
            do {
                if let c = try SiteConnection(address, name: "cvhost \(name)", timeout: 2) {
                    let s = try SiteStore(c)
                    formatProblem = try s.checkFormat()
                    watchers = (try s.desired.watch(), try s.nodes.watch(), try s.leases.watch())
                    store = s
                    joinedNs = HostClock.monotonicNs()
                    lastEchoNs = joinedNs
                    if let formatProblem { Log.error("fleet: \(formatProblem)") }
                    Log.info("fleet: node \(name) joined site \(address.site) at \(address.shown) (leases of \(Self.seconds(s.ttl)) s)")
                    return true
                }
                lastProblem = say("no server of \(address.shown) answers", previous: lastProblem)
            } catch {
                lastProblem = say(error.description, previous: lastProblem)
            }
            wake.withLock { _ = wake.wait(untilMonotonicNs: HostClock.monotonicNs() + 2_000_000_000) }
        }
        return false
    }

    private func say(_ problem: String, previous: String?) -> String {
        if problem != previous {
            Log.warning("fleet: the site's store cannot be reached (\(problem)): waiting for it; inputs given on this node's command line run meanwhile")
        }
        return problem
    }

    private func tick() {
        guard let store, let watchers else { return }
        if plugins.isEmpty, let names = run.pluginNames { plugins = names }
        let now0 = HostClock.monotonicNs()
        drain(watchers.desired) { view.desired($0, now: now0, said: saidOnce) }
        drain(watchers.nodes) { e in
            if e.key == name { lastEchoNs = now0 }
            view.node(e, now: now0, ttlNs: timing.ttlNs, said: saidOnce)
        }
        drain(watchers.leases) { view.lease($0, now: now0, said: saidOnce) }
        let now = HostClock.monotonicNs()
        let t = timing
        if now >= nextHeartbeatNs {
            let beat = heartbeat()
            if (try? store.nodes.put(name, SiteStore.encode(beat))) != nil {
                view.sawSelf(name, beat, now: now, ttlNs: t.ttlNs)
                lastPutNs = now
            }
            nextHeartbeatNs = now + t.renewNs
        }
        // Two heartbeats written and none seen come back: the watchers are made anew (the view is
        // kept meanwhile; what they give first is every key as it is now).
        if lastPutNs > lastEchoNs + 2 * t.renewNs, let fresh = try? (store.desired.watch(), store.nodes.watch(), store.leases.watch()) {
            Log.info("fleet: the store's changes stopped coming (a NATS server went?): watching anew")
            self.watchers = fresh
            lastEchoNs = now
        }
        renew(store, now: now, t)
        // Inputs are taken once the run runs (its plugins known) and the store's format is this cvhost's.
        guard formatProblem == nil, !plugins.isEmpty else { return }
        follow(store, now: now)
        applyRules()
        keepCounts(store, now: now)
        let assigned = view.assignment(now: now, ttlNs: t.ttlNs, wanting: name) { [view, name, capacity] node in
            node == name ? capacity : view.nodes[node]?.entry.capacity ?? 0
        }
        claim(store, now: now, t, assigned: assigned)
        rebalance(store, now: now, t, assigned: assigned)
        // GET /fleet's answer, made anew with each heartbeat (what it tells of other nodes is that old anyway).
        if lastPutNs == now { publish(now: now, t) }
    }

    private func drain(_ w: KeyValueWatcher, _ take: (KeyValueBucket.Entry) -> Void) {
        while let change = w.next(timeoutMs: 1) {
            if case .entry(let e) = change { take(e) }
        }
    }

    /// Says a malformed key once (until it is written anew).
    private func saidOnce(_ line: String) {
        if said.insert(line).inserted { Log.warning("fleet: " + line) }
    }

    // MARK: - Leases

    /// Renews the leases due; gives up those another node holds now and those that lapsed.
    private func renew(_ store: SiteStore, now: UInt64, _ t: SiteTiming) {
        for (input, held) in mine.sorted(by: { $0.key < $1.key }) {
            if now >= held.validUntilNs {
                lose(input, held, why: "its lease could not be renewed for \(Self.seconds(t.ttl - t.marginSeconds)) s (the store out of reach?)")
                continue
            }
            guard now >= held.nextRenewNs else { continue }
            let sent = HostClock.monotonicNs()
            do {
                let rev = try store.leases.update(input, SiteStore.encode(SiteLease(node: name)), last: held.lease)
                var h = held
                h.lease = rev
                h.nextRenewNs = sent + t.renewNs
                h.validUntilNs = sent + t.validNs
                mine[input] = h
                SourceLeases.hold(input, SourceLeases.Lease(node: name, revision: h.taken, validUntilNs: h.validUntilNs))
                view.leases[input] = SiteView.LeaseSeen(node: name, revision: rev, seenNs: sent)
            } catch where !error.isUnreachable {
                // Another holder (or none) now: lost. Out of reach: tried again next tick, until it lapses here.
                do {
                    if let current = try store.leases.get(input) {
                        if current.revision != held.lease { lose(input, held, why: "another node holds its lease now") }
                    } else {
                        lose(input, held, why: "its lease lapsed in the store")
                    }
                } catch {}
            } catch {}
        }
    }

    /// An input whose lease this node no longer holds: its results are no longer written (its
    /// lease's time is up, or is made so now), and it is stopped.
    private func lose(_ input: String, _ held: Held, why: String) {
        mine[input] = nil
        SourceLeases.hold(input, SourceLeases.Lease(node: name, revision: held.taken, validUntilNs: 0))
        Log.warning("fleet: input \(input) is no longer this node's (\(why)): stopped here")
        stopInput(input, taken: held.taken)
    }

    private func stopInput(_ input: String, taken: UInt64, then: (@Sendable () -> Void)? = nil) {
        queue(input).async { [run] in
            _ = run.handle(RunCommandJSON.text(["command": "remove_input", "name": input]), from: .fleet)
            SourceLeases.release(input, revision: taken)
            then?()
        }
    }

    // MARK: - The site's inputs

    /// Inputs this node runs whose entry changed (changed here too) or went (removed, lease given back).
    private func follow(_ store: SiteStore, now: UInt64) {
        for (input, held) in mine.sorted(by: { $0.key < $1.key }) {
            if let why = applied.withLock({ $0.removeValue(forKey: input) }) {
                // It could not be opened here: given back, not tried here again for a while.
                mine[input] = nil
                refused[input] = (now + 30_000_000_000, why)
                Log.warning("fleet: input \(input) cannot run on this node (\(why)): given back to the site")
                SourceLeases.release(input, revision: held.taken)
                try? store.leases.delete(input)
                view.leases[input] = nil
                view.freeSince[input] = now
                continue
            }
            guard let entry = view.inputs[input] else {
                mine[input] = nil
                Log.info("fleet: input \(input) was removed from the site")
                stopInput(input, taken: held.taken) { try? store.leases.delete(input) }
                continue
            }
            if entry.revision != held.entry {
                mine[input]?.entry = entry.revision
                queue(input).async { [run] in
                    _ = run.handle(entry.value.command(input, replacing: true), from: .fleet)
                }
            }
        }
        refused = refused.filter { $0.value.untilNs > now }
    }

    /// Takes the free inputs this node should run: those assigned to it at once; another's after a
    /// wait of a second a place ahead of it in the input's order (the assigned node did not take it).
    private func claim(_ store: SiteStore, now: UInt64, _ t: SiteTiming, assigned: [String: String]) {
        // A node that just joined first learns who else is there (their heartbeats).
        guard now >= joinedNs + t.settleNs else { return }
        for input in view.inputs.keys.sorted() where mine[input] == nil && refused[input] == nil && mine.count < capacity {
            guard let entry = view.inputs[input], view.isFree(input, now: now, ttlNs: t.ttlNs),
                  (entry.value.plugins ?? []).allSatisfy(plugins.contains) else { continue }
            let freeSince = view.freeSince[input] ?? now
            view.freeSince[input] = freeSince
            if assigned[input] != name {
                let order = view.able(for: input, entry.value, now: now, ttlNs: t.ttlNs, wanting: name)
                guard let place = order.firstIndex(of: name), now >= freeSince + UInt64(place + 1) * t.claimStepNs else { continue }
            }
            let sent = HostClock.monotonicNs()
            guard let rev = try? store.leases.create(input, SiteStore.encode(SiteLease(node: name))) else {
                // Someone holds it (its lease not yet lapsed): seen as held for now.
                view.leases[input] = SiteView.LeaseSeen(node: "?", revision: 0, seenNs: now)
                continue
            }
            let held = Held(lease: rev, taken: rev, entry: entry.revision, nextRenewNs: sent + t.renewNs, validUntilNs: sent + t.validNs)
            mine[input] = held
            // What its last node counted: its lines and zones go on from it once their rules are set (applyRules).
            carried.withLock { _ = $0.remove(input) }
            pendingCounts[input] = keptCounts(store, input)
            view.leases[input] = SiteView.LeaseSeen(node: name, revision: rev, seenNs: sent)
            view.freeSince[input] = nil
            SourceLeases.hold(input, SourceLeases.Lease(node: name, revision: rev, validUntilNs: held.validUntilNs))
            Log.info("fleet: input \(input) taken (lease \(rev))")
            let applied = self.applied
            queue(input).async { [run] in
                guard let answer = run.handle(entry.value.command(input, replacing: false), from: .fleet) else { return }
                switch answer.outcome {
                case .done: break
                case .refused, .failed: applied.withLock { $0[input] = Self.error(of: answer) }
                }
            }
        }
    }

    /// Gives back, one at a time, an input assigned to another node that has settled in the site (one
    /// that joined): it takes it at once, so each moves once.
    private func rebalance(_ store: SiteStore, now: UInt64, _ t: SiteTiming, assigned: [String: String]) {
        // Only on a view that is whole: this node's own heartbeat seen come back lately.
        guard now >= nextRebalanceNs, now <= lastEchoNs + t.renewNs + 1_000_000_000 else {
            wantedMove = nil
            return
        }
        let move = mine.keys.sorted().lazy.compactMap { input -> (String, String)? in
            guard let best = assigned[input], best != self.name, let seen = self.view.nodes[best], now >= seen.firstSeenNs + t.settleNs else { return nil }
            return (input, best)
        }.first
        guard let (input, best) = move else {
            wantedMove = nil
            return
        }
        if wantedMove?.input != input || wantedMove?.to != best { wantedMove = (input, best, now) }
        guard let wanted = wantedMove, now >= wanted.sinceNs + t.renewNs, let held = mine[input] else { return }
        wantedMove = nil
        mine[input] = nil
        Log.info("fleet: input \(input) given to node \(best), where the site places it")
        stopInput(input, taken: held.taken) { try? store.leases.delete(input) }
        nextRebalanceNs = now + t.rebalanceNs
    }

    /// Leaving: every lease still held given back (its input has stopped), and the heartbeat removed.
    private func giveBack() {
        guard let store else { return }
        let now = HostClock.monotonicNs()
        let carried = self.carried.withLock { $0 }
        for (input, held) in mine where now < held.validUntilNs {
            // Its last counts first (its input has stopped: they are final), for the node that takes it next.
            let counts = run.counts(of: input)
            if carried.contains(input), !counts.isEmpty, counts != writtenCounts[input] {
                _ = try? store.desired.put(SiteStore.countsPrefix + input, SiteStore.encode(counts))
            }
            try? store.leases.delete(input)
            SourceLeases.release(input, revision: held.taken)
        }
        if !mine.isEmpty { Log.info("fleet: \(mine.count) input\(mine.count == 1 ? "" : "s") given back to site \(address.site)") }
        mine = [:]
        try? store.nodes.delete(name)
    }

    /// The site as this node sees it, for GET /fleet: the live nodes, every input with its owner.
    private func publish(now: UInt64, _ t: SiteTiming) {
        let live = view.nodes.filter { $0.key == name || now <= $0.value.seenNs + SiteView.liveNs(t.ttlNs) }.map(\.value.entry)
        var leases: [String: (node: String, revision: UInt64)] = [:]
        for (input, l) in view.leases where l.node != "?" { leases[input] = (l.node, l.revision) }
        let status = SiteStatus(site: address.site, leaseSeconds: t.ttl, nodes: live, inputs: view.inputs.map { ($0.key, $0.value.value, nil) }, leases: leases)
        var json = status.json
        json["node"] = name
        let data = (try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        published.withLock { $0 = String(decoding: data, as: UTF8.self) }
    }

    // MARK: - Helpers

    private func heartbeat() -> SiteNode {
        var health: [String: SiteNode.InputState] = [:]
        if let answer = run.handle(#"{"command":"get_inputs"}"#, from: .fleet),
           let o = try? JSONSerialization.jsonObject(with: Data(answer.line.finished())) as? [String: Any],
           let inputs = (o["result"] as? [String: Any])?["inputs"] as? [[String: Any]] {
            for i in inputs {
                guard let n = i["name"] as? String, mine[n] != nil, let h = i["health"] as? [String: Any] else { continue }
                health[n] = SiteNode.InputState(state: h["state"] as? String ?? "starting", fps: h["fps"] as? Double,
                                                last_frame_age: h["last_frame_age"] as? Double)
            }
        }
        for n in mine.keys where health[n] == nil { health[n] = SiteNode.InputState(state: "starting") }
        return SiteNode(node: name, plugins: plugins, capacity: capacity, inputs: health,
                        refused: refused.isEmpty ? nil : refused.mapValues(\.why), http: http, version: Producer.version, format: SiteStore.format)
    }

    func queue(_ input: String) -> DispatchQueue {
        if let q = queues[input] { return q }
        let q = DispatchQueue(label: "cvhost.fleet.\(input)")
        queues[input] = q
        return q
    }

    private static func seconds(_ s: Double) -> String {
        s == s.rounded() ? String(Int(s)) : String(format: "%.1f", s)
    }

    static func error(of answer: LiveCommands.Answer) -> String {
        let o = try? JSONSerialization.jsonObject(with: Data(answer.line.finished())) as? [String: Any]
        return o?["error"] as? String ?? "refused"
    }
}

extension SiteNode.InputState {
    init(state: String) {
        self.init(state: state, fps: nil, last_frame_age: nil)
    }
}
