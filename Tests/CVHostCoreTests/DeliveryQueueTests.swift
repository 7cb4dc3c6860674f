import Foundation
import Testing
@testable import CVHostCore

/// One output's queue of frames: who gets which frame, what is dropped and why, and what finish
/// waits for. A worker held inside its handler by a semaphore makes the queue's state known
/// without timing.
@Suite("DeliveryQueue: a bounded queue of frames per output")
struct DeliveryQueueTests {
    static func sample(_ sequence: UInt64) -> SampleBuffer {
        let pixels = PixelBuffer.allocate(format: .gray8, width: 2, height: 2, colorimetry: .jpeg) { _, _ in }
        return SampleBuffer(sequence: sequence, captureTimeNs: 0, monotonicCaptureNs: 0, presentationTimeNs: 0, pixelBuffer: pixels)
    }

    /// Waits until `condition` holds (no assertion on how long it takes).
    static func until(_ condition: () -> Bool) {
        while !condition() { usleep(1000) }
    }

    @Test("drop-late: with the worker busy, a full queue drops its oldest waiting frame (reason late) and keeps the newest; tickets follow dequeue order")
    func dropLate() {
        let inside = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let handled = Locked<[(UInt64, UInt64)]>([]), dropped = Locked<[(UInt64, DropReason)]>([]), finished = Locked<[Int]>([])
        let q = DeliveryQueue(label: "test.drop-late", capacity: 2, policy: .dropLate, workerCount: 1,
                              handler: { s, c in
                                  handled.withLock { $0.append((s.sequence, c.ticket)) }
                                  if s.sequence == 0 { inside.signal(); release.wait() }
                              },
                              onDrop: { s, r in dropped.withLock { $0.append((s.sequence, r)) } },
                              onFinish: { w in finished.withLock { $0.append(w) } })
        q.start()
        q.enqueue(Self.sample(0))
        inside.wait()  // frame 0 is being handled: 1 to 4 wait for a queue of 2
        for s: UInt64 in 1...4 { q.enqueue(Self.sample(s)) }
        #expect(q.depth == 2 && q.maxDepth == 2)
        #expect(dropped.withLock { $0.map(\.0) } == [1, 2] && dropped.withLock { $0.allSatisfy { $0.1 == .late } })
        release.signal()
        q.finish()
        #expect(handled.withLock { $0.map(\.0) } == [0, 3, 4])
        #expect(handled.withLock { $0.map(\.1) } == [0, 1, 2])
        #expect(finished.withLock { $0 } == [0])
    }

    @Test("block: the producer waits for room, so no frame is dropped and every one is handled in order")
    func block() {
        let handled = Locked<[UInt64]>([]), dropped = Locked<Int>(0)
        let release = DispatchSemaphore(value: 0)
        let q = DeliveryQueue(label: "test.block", capacity: 1, policy: .block, workerCount: 1,
                              handler: { s, _ in
                                  if s.sequence == 0 { release.wait() }
                                  handled.withLock { $0.append(s.sequence) }
                              },
                              onDrop: { _, _ in dropped.withLock { $0 += 1 } }, onFinish: { _ in })
        q.start()
        let producer = DispatchGroup()
        producer.enter()
        Thread.detachNewThread {
            for s: UInt64 in 0..<5 { q.enqueue(Self.sample(s)) }
            producer.leave()
        }
        // The producer is held: frame 0 in the handler, frame 1 waiting, frame 2 waits for room.
        Self.until { q.depth == 1 }
        #expect(producer.wait(timeout: .now()) == .timedOut)
        release.signal()
        producer.wait()
        q.finish()
        #expect(handled.withLock { $0 } == [0, 1, 2, 3, 4])
        #expect(dropped.withLock { $0 } == 0)
    }

    @Test("several workers: each frame is handled once, with a ticket of its own; finish returns once every worker ran its finish handler")
    func workers() {
        let tickets = Locked<[UInt64: UInt64]>([:]), finished = Locked<Set<Int>>([])
        let q = DeliveryQueue(label: "test.workers", capacity: 100, policy: .block, workerCount: 3,
                              handler: { s, c in tickets.withLock { $0[s.sequence] = c.ticket } },
                              onDrop: { _, _ in }, onFinish: { w in finished.withLock { _ = $0.insert(w) } })
        q.start()
        for s: UInt64 in 0..<50 { q.enqueue(Self.sample(s)) }
        q.finish()
        #expect(tickets.withLock { $0.count } == 50)
        #expect(Set(tickets.withLock { $0.values }) == Set(0..<50))
        #expect(finished.withLock { $0 } == [0, 1, 2])
    }
}
