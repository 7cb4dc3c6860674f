import CVHostCore
import CVHostLines

/// A sink that can be slow (a disk, a broker): lines wait in its own bounded queue (`LineQueue`)
/// and its own thread delivers them, so that `write` never waits.
public protocol QueuedSink: OutputSink {
    /// The destination's name (never a password).
    var name: String { get }
    var statistics: SinkStatistics { get }
    /// At the end, how long waiting lines may take to be delivered (`drain=`).
    var drainSeconds: Double { get }
    /// Drops the oldest waiting lines (counted) until `n` more fit without a drop.
    func makeRoom(for n: Int)
    /// Takes no more lines, delivers what waits until `deadlineNs` (monotonic) and stops; what is
    /// still waiting then is counted as `unsent`. - Returns: the sink's final statistics.
    func finish(deadlineNs: UInt64) -> SinkStatistics
}

/// A queued sink's side that is only its queue: lines wait in `queue` for the sink's thread.
protocol LineQueueBacked: QueuedSink {
    var queue: LineQueue { get }
    var queueSettings: OutputDestination.QueueSettings { get }
}

extension LineQueueBacked {
    public func write(_ line: OutputLine) {
        queue.push(line)
    }

    public var drainSeconds: Double { queueSettings.drainSeconds }

    public func makeRoom(for n: Int) {
        queue.makeRoom(for: n)
    }
}

/// What a queued sink's thread shares with the run: whether it was asked to finish and by when,
/// and whether it has ended.
final class SinkThreadState: @unchecked Sendable {
    // @unchecked Sendable: the fields are touched only with `lock` held.
    private let lock = ConditionLock()
    private var deadline: UInt64?
    private var ended = false

    /// Set by finish(): deliver what waits, until this monotonic time.
    var finishDeadline: UInt64? { lock.withLock { deadline } }

    func requestFinish(deadlineNs: UInt64) {
        lock.withLock { deadline = deadlineNs }
    }

    /// Called by the sink's thread as it returns.
    func markEnded() {
        lock.withLock {
            ended = true
            lock.broadcast()
        }
    }

    /// Waits for the thread's end. - Returns: false if it is still running at `untilNs`.
    func waitEnded(untilNs: UInt64) -> Bool {
        lock.withLock {
            while !ended {
                if !lock.wait(untilMonotonicNs: untilNs) { return ended }
            }
            return true
        }
    }
}
