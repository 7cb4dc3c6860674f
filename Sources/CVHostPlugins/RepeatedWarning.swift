import CVHostCore
import Synchronization

/// Something a plugin may get wrong on every frame (a refused result, a failed call): counted, and
/// logged so that it cannot flood stderr: the first five times in full, then every 1000th.
final class RepeatedWarning: Sendable {
    private let count = Atomic<UInt64>(0)
    private let source: String

    /// - Parameter source: what the log lines are tagged with.
    init(source: String) { self.source = source }

    /// How many times so far.
    var total: UInt64 { count.load(ordering: .relaxed) }

    /// Counts once more; logs `message(n)` when this time is one to tell.
    func record(_ message: (UInt64) -> String) {
        let n = count.add(1, ordering: .relaxed).newValue
        if n <= 5 || n % 1000 == 0 { Log.warning(message(n), source: source) }
    }
}
