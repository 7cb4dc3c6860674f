import CVHostCore
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
    let wakeDescriptor: Int32
    private let wakeWriter: Int32
    private let lock = SerialLock()
    private var storage: [OutputLine] = []
    private var head = 0
    private var dropped: UInt64 = 0

    init(capacity: Int) {
        self.capacity = capacity
        var ends: [Int32] = [-1, -1]
        // Out of descriptors: as for memory or a thread the run needs, one line and exit 7, not a trap.
        if pipe(&ends) != 0 { ResourceExhaustion.report("a pipe for an output's queue", error: errno) }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        wakeDescriptor = ends[0]
        wakeWriter = ends[1]
    }

    deinit {
        close(wakeDescriptor)
        close(wakeWriter)
    }

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

    /// Drops the oldest lines until `n` more fit without a drop: taken before lines whose
    /// metrics must already count every drop they cause (an input's final lines).
    func makeRoom(for n: Int) {
        lock.run {
            let excess = storage.count - head + min(n, capacity) - capacity
            if excess > 0 { dropOldest(excess) }
        }
    }

    /// Takes up to `max` lines from the front.
    func popFront(max: Int) -> [OutputLine] {
        lock.run {
            let end = min(storage.count, head + max)
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
    func wake() {
        var one: UInt8 = 1
        _ = Glibc.write(wakeWriter, &one, 1)  // a full pipe is awake already
    }

    /// Makes `wakeDescriptor` unreadable again (before taking lines).
    func clearWake() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while read(wakeDescriptor, &bytes, bytes.count) == bytes.count {}
    }

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
