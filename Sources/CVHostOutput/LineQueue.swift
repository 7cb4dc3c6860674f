import CVHostCore
import CVHostLines
import Glibc

/// The lines waiting for one sink: bounded, and a writer never waits. When it is full, the
/// oldest waiting line makes room and is counted (`droppedFull`): a broker away for a while
/// costs the oldest lines, never the capture's pace, and never silently.
///
/// The sink's thread sleeps in poll(2) on `wakeDescriptor` (a pipe's end) beside its own socket: a
/// line arriving in an empty queue, or `wake()`, makes it readable.
final class LineQueue: @unchecked Sendable {
    // @unchecked Sendable: `storage`, `head` and the counter are touched only with `lock` held.
    let capacity: Int
    private let wakePipe = WakePipe("an output's queue")
    private let lock = SerialLock()
    private var storage: [OutputLine] = []
    private var head = 0
    private var dropped: UInt64 = 0

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Readable while lines arrived since the last `clearWake`.
    var wakeDescriptor: Int32 { wakePipe.descriptor }

    var count: Int { lock.run { storage.count - head } }

    /// Lines dropped because the queue was full.
    var droppedFull: UInt64 { lock.run { dropped } }

    /// Adds a line at the back; when full, drops the oldest first.
    func push(_ line: OutputLine) {
        let wasEmpty = lock.run {
            let empty = storage.count == head
            if storage.count - head >= capacity { dropOldest(1) }
            storage.append(line)
            return empty
        }
        if wasEmpty { wake() }
    }

    /// Adds a line at the back only if it fits. - Returns: false when the queue is full (nothing dropped).
    func pushIfRoom(_ line: OutputLine) -> Bool {
        let (added, wasEmpty) = lock.run { () -> (Bool, Bool) in
            guard storage.count - head < capacity else { return (false, false) }
            let empty = storage.count == head
            storage.append(line)
            return (true, empty)
        }
        if wasEmpty { wake() }
        return added
    }

    /// Drops the oldest lines until `n` more fit without a drop: taken before lines whose
    /// metrics must already count every drop they cause (an input's final lines).
    func makeRoom(for n: Int) {
        lock.run {
            let excess = storage.count - head + min(n, capacity) - capacity
            if excess > 0 { dropOldest(excess) }
        }
    }

    /// Takes up to `max` lines from the front (`Int.max`: all of them).
    func popFront(max: Int) -> [OutputLine] {
        lock.run {
            // Not `head + max`: with lines dropped from the front (head > 0), Int.max overflows.
            let end = head + min(Swift.max(0, max), storage.count - head)
            let taken = Array(storage[head..<end])
            head = end
            if head == storage.count {
                storage.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 4096 && head * 2 > storage.count {
                storage.removeFirst(head)
                head = 0
            }
            return taken
        }
    }

    /// Makes `wakeDescriptor` readable.
    func wake() { wakePipe.wake() }

    /// Makes `wakeDescriptor` unreadable again (before taking lines).
    func clearWake() { wakePipe.clear() }

    /// Called with the lock held.
    private func dropOldest(_ n: Int) {
        head += n
        dropped += UInt64(n)
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        }
    }
}
