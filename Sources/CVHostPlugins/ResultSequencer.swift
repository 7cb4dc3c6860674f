import CVHostCore
import CVHostOutput

/// Puts the results of frames processed by parallel instances back in frame order before
/// they are written: results of ticket n are written only after those of every ticket < n.
/// With one instance, every ticket arrives in order and passes straight through.
final class ResultSequencer: @unchecked Sendable {
    // @unchecked Sendable: all state is behind `lock`.
    private let lock = ConditionLock()
    private var nextTicket: UInt64 = 0
    private var held: [UInt64: [OutputLine]] = [:]
    private let write: @Sendable (OutputLine) -> Void

    init(write: @escaping @Sendable (OutputLine) -> Void) {
        self.write = write
    }

    /// Hands in the lines of one ticket (possibly none). Writes every line that is now in order.
    func submit(ticket: UInt64, lines: [OutputLine]) {
        lock.withLock {
            held[ticket] = lines
            // Written with the lock held, so that two workers cannot reorder their releases.
            while let ready = held.removeValue(forKey: nextTicket) {
                for line in ready { write(line) }
                nextTicket += 1
            }
        }
    }

    /// Tickets waiting for an earlier one (for metrics).
    var heldCount: Int { lock.withLock { held.count } }
}
