import CVHostCore
import Foundation
import Testing
@testable import CVHostPlugins

/// The fair scheduler of shared instances: who is served, in what order, in what batches. Each
/// test holds a lane busy with a semaphore and waits for the callers it needs to be queued (by the
/// scheduler's own count), so nothing here leans on timing.
@Suite("FrameBatches: calls of several inputs on shared instances")
struct FrameBatchesTests {
    /// Runs `call` on a thread of its own; the group is left when it returns.
    private static func spawn(_ group: DispatchGroup, _ call: @escaping @Sendable () -> Void) {
        group.enter()
        Thread.detachNewThread {
            call()
            group.leave()
        }
    }

    /// Waits until `condition` holds (polling the scheduler's state; no assertion on how long).
    private static func until(_ condition: () -> Bool) {
        while !condition() { usleep(1000) }
    }

    @Test("calls that queue while the one lane is busy go in one batch, in the order they came, each answered with its own outcome")
    func batchesFormUnderLoad() {
        let batches = FrameBatches<Int, Int>(lanes: 1, batchSize: 4, waitMs: 0)
        let busy = DispatchSemaphore(value: 0)
        let served = Locked<[[Int]]>([])
        let answers = Locked<[Int: Int]>([:])
        let group = DispatchGroup()
        let body: @Sendable ([Int], Int) -> [Int] = { items, lane in
            served.withLock { $0.append(items) }
            if items == [0] { busy.wait() }
            return items.map { $0 * 10 + lane }
        }
        Self.spawn(group) { let o = batches.run(0, body); answers.withLock { $0[0] = o } }
        Self.until { served.withLock { $0.count } == 1 }
        for i in 1...3 {
            Self.spawn(group) { let o = batches.run(i, body); answers.withLock { $0[i] = o } }
            Self.until { batches.waitingCount == i }
        }
        busy.signal()
        group.wait()
        #expect(served.withLock { $0 } == [[0], [1, 2, 3]])
        #expect(answers.withLock { $0 } == [0: 0, 1: 10, 2: 20, 3: 30])
        #expect(batches.counts == (calls: 2, items: 4))
    }

    @Test("a batch holds at most batchSize calls; the rest wait their turn, first come first served")
    func batchSizeBounds() {
        let batches = FrameBatches<Int, Int>(lanes: 1, batchSize: 2, waitMs: 0)
        let busy = DispatchSemaphore(value: 0)
        let served = Locked<[[Int]]>([])
        let group = DispatchGroup()
        let body: @Sendable ([Int], Int) -> [Int] = { items, _ in
            served.withLock { $0.append(items) }
            if items == [0] { busy.wait() }
            return items
        }
        Self.spawn(group) { _ = batches.run(0, body) }
        Self.until { served.withLock { $0.count } == 1 }
        for i in 1...5 {
            Self.spawn(group) { _ = batches.run(i, body) }
            Self.until { batches.waitingCount == i }
        }
        busy.signal()
        group.wait()
        #expect(served.withLock { $0 } == [[0], [1, 2], [3, 4], [5]])
    }

    @Test("batchSize 1: every call is its own, and two lanes serve two callers at once")
    func lanesInParallel() {
        let batches = FrameBatches<Int, Int>(lanes: 2, batchSize: 1, waitMs: 0)
        let inside = Locked<Set<Int>>([])
        let release = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        let body: @Sendable ([Int], Int) -> [Int] = { items, lane in
            inside.withLock { _ = $0.insert(lane) }
            release.wait()
            return items
        }
        Self.spawn(group) { _ = batches.run(0, body) }
        Self.spawn(group) { _ = batches.run(1, body) }
        // Both lanes busy at once: neither caller waited for the other.
        Self.until { inside.withLock { $0 } == [0, 1] }
        release.signal()
        release.signal()
        group.wait()
        #expect(batches.counts == (calls: 2, items: 2))
    }

    @Test("with no one else waiting a call is served at once, alone, and the lane is free again after it")
    func aloneAtOnce() {
        let batches = FrameBatches<String, String>(lanes: 1, batchSize: 8, waitMs: 0)
        #expect(batches.run("a") { items, _ in items.map { $0 + "!" } } == "a!")
        #expect(batches.run("b") { items, _ in items.map { $0 + "?" } } == "b?")
        #expect(batches.counts == (calls: 2, items: 2))
        #expect(batches.waitingCount == 0)
    }
}
