import CVHostCore
import CVHostLines

/// Puts the results of frames processed by parallel instances back in frame order before
/// they are written: results of ticket n are written only after those of every ticket < n.
/// With one instance, every ticket arrives in order and passes straight through. Each ticket's
/// lines go to `write` together, with the frame they are of (nil: none was processed) and whether
/// the plugin processed it without failing.
final class ResultSequencer: @unchecked Sendable {
    // @unchecked Sendable: all state is behind `lock`.
    private let lock = ConditionLock()
    private var nextTicket: UInt64 = 0
    private var held: [UInt64: (lines: [OutputLine], frame: ProcessedFrame?, succeeded: Bool)] = [:]
    private let write: @Sendable ([OutputLine], ProcessedFrame?, Bool) -> Void

    init(write: @escaping @Sendable ([OutputLine], ProcessedFrame?, Bool) -> Void) {
        self.write = write
    }

    /// Hands in the lines of one ticket (possibly none). Writes every ticket that is now in order.
    func submit(ticket: UInt64, lines: [OutputLine], frame: ProcessedFrame?, succeeded: Bool = true) {
        lock.withLock {
            held[ticket] = (lines, frame, succeeded)
            // Written with the lock held, so that two workers cannot reorder their releases.
            while let ready = held.removeValue(forKey: nextTicket) {
                write(ready.lines, ready.frame, ready.succeeded)
                nextTicket += 1
            }
        }
    }

    /// Tickets waiting for an earlier one (for metrics).
    var heldCount: Int { lock.withLock { held.count } }
}
