import CVHostCore

/// Calls of several inputs waiting for the instances they share (SharedInstances), served first
/// come first served and gathered into batches. The caller at the front of the queue takes a free
/// instance (a lane) and with it up to `batchSize` calls waiting, its own first: one call into
/// the plugin for all of them (a model run once on the frames of several cameras), whose outcomes
/// go back to each caller. While every instance is busy the queue fills by itself, so batches
/// form under load and cost nothing when there is none; `waitNs` lets a caller that finds an
/// instance free wait that long for others to join it (latency traded for fewer, larger calls).
///
/// Fair: an input with calls waiting never waits longer than the calls queued before its own,
/// whatever another input sends (each input's delivery queue holds its other frames).
final class FrameBatches<Item, Outcome>: @unchecked Sendable {
    // @unchecked Sendable: every field is touched with `lock` held. Items are only handed from a
    // waiting caller to the one serving it, who uses them while their owner waits.
    private let lock = ConditionLock()
    private let batchSize: Int
    private let waitNs: UInt64
    private var free: [Int]
    private var waiting: [(ticket: UInt64, item: Item)] = []
    private var answered: [UInt64: Outcome] = [:]
    private var nextTicket: UInt64 = 0
    /// Calls made, and the items they carried (their ratio is the mean batch).
    private(set) var calls: UInt64 = 0
    private(set) var items: UInt64 = 0

    /// - Parameters: lanes: the instances; batchSize: the most items in one call (1: no batching);
    ///   waitMs: how long a caller with a free instance waits for a batch to fill (0: not at all).
    init(lanes: Int, batchSize: Int, waitMs: Int) {
        free = Array((0..<lanes).reversed())
        self.batchSize = max(1, batchSize)
        waitNs = UInt64(max(0, waitMs)) * 1_000_000
    }

    /// The figures so far: calls made, items they carried.
    var counts: (calls: UInt64, items: UInt64) { lock.withLock { (calls, items) } }

    /// Calls waiting for a lane now (not yet taken into a batch).
    var waitingCount: Int { lock.withLock { waiting.count } }

    /// `item`'s outcome: from `body` run by this caller on a free lane with the items at the front
    /// of the queue (this one first), or by another caller whose batch took this item.
    /// - Parameter body: runs the items on the lane; returns an outcome for each, in their order.
    func run(_ item: Item, _ body: (_ items: [Item], _ lane: Int) -> [Outcome]) -> Outcome {
        lock.lock()
        let me = nextTicket
        nextTicket += 1
        waiting.append((me, item))
        // One that waits for a batch to fill is told of each arrival.
        lock.broadcast()
        while true {
            if let outcome = answered.removeValue(forKey: me) {
                lock.unlock()
                return outcome
            }
            if waiting.first?.ticket == me, let lane = free.popLast() {
                return serve(on: lane, body)
            }
            lock.wait()
        }
    }

    /// Takes the front of the queue (this caller's item first) on `lane`, runs it, answers each.
    /// Called with `lock` held; returns with it released.
    private func serve(on lane: Int, _ body: (_ items: [Item], _ lane: Int) -> [Outcome]) -> Outcome {
        if waitNs > 0, batchSize > 1, waiting.count < batchSize {
            let deadline = HostClock.monotonicNs() + waitNs
            while waiting.count < batchSize, lock.wait(untilMonotonicNs: deadline) {}
        }
        let taken = Array(waiting.prefix(batchSize))
        waiting.removeFirst(taken.count)
        calls += 1
        items += UInt64(taken.count)
        // The next at the front may take another free lane now.
        lock.broadcast()
        lock.unlock()
        let outcomes = body(taken.map(\.item), lane)
        precondition(outcomes.count == taken.count, "a batch's body answers each of its items")
        lock.lock()
        free.append(lane)
        for (t, outcome) in zip(taken, outcomes).dropFirst() { answered[t.ticket] = outcome }
        lock.broadcast()
        lock.unlock()
        return outcomes[0]
    }
}
