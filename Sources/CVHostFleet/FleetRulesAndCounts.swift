import CVHostAnalytics
import CVHostCore
import CVHostRun
import Foundation

/// A node's part in the site's tracks, zones and lines (`SiteRules`), and in its inputs' counts:
/// the rules of the inputs it runs set (and taken away with them), the counts it keeps in the store
/// for the node that runs an input next, and those it goes on from when it takes one over.
extension FleetNode {
    /// Sets the site's zones and lines of the inputs this node runs (on each input's queue, after
    /// its add) and the site's tracks of its plugins; takes away those removed from the site and
    /// those of inputs no longer here. Then an input just taken goes on from its kept counts.
    func applyRules() {
        for (key, was) in appliedRules.sorted(by: { $0.key < $1.key }) {
            // It stays while the site has it and (a zone's, a line's) its input, as it is now, runs here.
            let stays = view.rules[key].map { now in now.rule.input.map { mine[$0] != nil } ?? true } ?? false
            guard !stays else { continue }
            appliedRules[key] = nil
            // Taken away on its input's queue (after the input, if the input left).
            perform(was.rule.removeCommand, on: was.rule.input, what: nil)
        }
        for (key, seen) in view.rules.sorted(by: { $0.key < $1.key }) where appliedRules[key]?.revision != seen.revision {
            if let input = seen.rule.input {
                guard mine[input] != nil else { continue }
            } else {
                guard plugins.contains(seen.rule.name) else { continue }
            }
            appliedRules[key] = seen
            perform(seen.rule.setCommand, on: seen.rule.input, what: "\(seen.rule.kind.rawValue) \(seen.rule.name) (revision \(seen.revision))")
        }
        for (input, totals) in pendingCounts where mine[input] != nil {
            pendingCounts[input] = nil
            queue(input).async { [run, carried] in
                if !totals.isEmpty { Log.info("fleet: input \(input)'s lines and zones go on from the counts its last node kept") }
                run.goOn(source: input, from: totals)
                carried.withLock { _ = $0.insert(input) }
            }
        }
        pendingCounts = pendingCounts.filter { mine[$0.key] != nil }
    }

    /// A command for the site's rules: on the input's queue (after what was asked of the input
    /// before it), or here for a track. A refusal is said (`what`: what it set).
    func perform(_ command: String, on input: String?, what: String?) {
        let act = { @Sendable [run, name] in
            guard let answer = run.handle(command, from: .fleet), let what else { return }
            if case .done = answer.outcome { return }
            Log.warning("fleet: the site's \(what) cannot be set on node \(name): \(Self.error(of: answer))")
        }
        if let input { queue(input).async(execute: act) } else { act() }
    }

    /// What the store kept of an input's counts (nothing: none, or not readable, said).
    func keptCounts(_ store: SiteStore, _ input: String) -> [String: CountTotals] {
        let entry: KeyValueBucket.Entry?
        do { entry = try store.desired.get(SiteStore.countsPrefix + input) } catch {
            Log.warning("fleet: the kept counts of input \(input) cannot be read (\(error)): its lines and zones count from 0 here")
            return [:]
        }
        guard let entry else { return [:] }
        switch SiteStore.decode([String: CountTotals].self, entry, in: "the site's bucket", what: "an input's counts") {
        case .success(let counts): return counts
        case .failure(let m):
            Log.warning("fleet: " + m.description)
            return [:]
        }
    }

    /// Writes what each input of this node counted to the store, when it changed (every renewal):
    /// the next node to run it goes on from there.
    func keepCounts(_ store: SiteStore, now: UInt64) {
        // With the heartbeat (it was written this tick): every quarter TTL.
        guard lastPutNs == now else { return }
        let carried = self.carried.withLock { $0 }
        for input in mine.keys.sorted() where carried.contains(input) {
            let counts = run.counts(of: input)
            guard !counts.isEmpty, counts != writtenCounts[input] else { continue }
            if (try? store.desired.put(SiteStore.countsPrefix + input, SiteStore.encode(counts))) != nil { writtenCounts[input] = counts }
        }
        writtenCounts = writtenCounts.filter { mine[$0.key] != nil }
    }
}
