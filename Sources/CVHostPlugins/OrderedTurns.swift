import CVHostCore

/// Lets the delivery workers of one `--plugin` take turns in frame order (delivery tickets 0, 1,
/// 2, ...): each waits until every earlier ticket had its turn, runs its turn alone, and passes
/// on. The ordered stage's calls are made in these turns. Every ticket takes its turn, even one
/// with nothing to do, or the tickets after it would wait for ever.
final class OrderedTurns: @unchecked Sendable {
    // @unchecked Sendable: all state is behind `lock`.
    private let lock = ConditionLock()
    private var next: UInt64 = 0

    /// Runs `body` once every ticket before `ticket` has had its turn; then it is the next ticket's.
    func take<R>(_ ticket: UInt64, _ body: () -> R) -> R {
        lock.lock()
        while next != ticket { lock.wait() }
        lock.unlock()
        // Only this ticket can run now: no other worker holds `next`.
        let result = body()
        lock.withLock {
            next += 1
            lock.broadcast()
        }
        return result
    }
}
