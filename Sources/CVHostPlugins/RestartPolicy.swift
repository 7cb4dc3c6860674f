/// When a worker that failed is started again, and when it is given up (quarantined): a value
/// with no clock or process of its own, so that every case can be tested with times it is given.
/// After a failure the worker is started again after a backoff that grows with the failures
/// of the last `window` (0.1 s doubling, at most 10 s); the `quarantineAfter`th failure within the
/// window quarantines it for the rest of the run.
struct RestartPolicy: Sendable, Equatable {
    static let quarantineAfter = 5
    static let windowNs: UInt64 = 60_000_000_000

    /// What becomes of a worker after a failure.
    enum Decision: Sendable, Equatable {
        /// Start it again at this time (monotonic ns).
        case restart(atNs: UInt64)
        /// Too many failures within the window: no more restarts.
        case quarantine(failures: Int)
    }

    /// When the failures of the window happened (monotonic ns), oldest first.
    private(set) var recentFailures: [UInt64] = []

    /// The wait before a restart after the `n`th failure within the window.
    static func backoffNs(failuresInWindow n: Int) -> UInt64 {
        min(10_000_000_000, 100_000_000 << UInt64(max(0, min(n - 1, 10))))
    }

    /// A failure at `now`: what to do.
    mutating func failed(atNs now: UInt64) -> Decision {
        recentFailures = recentFailures.filter { now &- $0 < Self.windowNs } + [now]
        let n = recentFailures.count
        return n >= Self.quarantineAfter ? .quarantine(failures: n) : .restart(atNs: now + Self.backoffNs(failuresInWindow: n))
    }
}
