import CVHostCore
import Synchronization

/// The inputs this process runs by a fleet's lease (`cvhost run --fleet`): each one's lease, and
/// until when it holds by this process's own monotonic clock. Every line of such an input carries
/// the node and the lease's revision (`"node"`, `"lease"`, after `source`), so that a consumer can
/// tell a former owner's lines from the present one's (a later owner's lease has a higher revision);
/// and once a lease has lapsed (the node was cut off from the store, or frozen, past its lease),
/// what the input saw is no longer written (`admits`), even before its input has stopped: another
/// node may run it by then.
///
/// Process-wide, as `Producer` is: the envelope is made in every room.
public enum SourceLeases {
    public struct Lease: Sendable, Equatable {
        /// The node that holds it (`--node`).
        public let node: String
        /// The store's revision of the lease when it was taken: a later owner's is higher.
        public let revision: UInt64
        /// Until when (monotonic clock, ns) this process may write the input's results.
        public var validUntilNs: UInt64

        public init(node: String, revision: UInt64, validUntilNs: UInt64) {
            self.node = node
            self.revision = revision
            self.validUntilNs = validUntilNs
        }
    }

    private static let leases = Mutex<[String: Lease]>([:])
    /// Whether any input is held by a lease: lines of a run without a fleet do not take the lock.
    private static let any = Atomic<Bool>(false)

    /// An input taken (or its lease renewed: `validUntilNs` later).
    public static func hold(_ source: String, _ lease: Lease) {
        leases.withLock { $0[source] = lease }
        any.store(true, ordering: .releasing)
    }

    /// An input no longer held by the lease of `revision` (it has stopped, its last lines written);
    /// a later lease of it, taken meanwhile, stays.
    public static func release(_ source: String, revision: UInt64) {
        leases.withLock { all in
            if all[source]?.revision == revision { all[source] = nil }
            any.store(!all.isEmpty, ordering: .releasing)
        }
    }

    public static func lease(of source: String) -> Lease? {
        guard any.load(ordering: .acquiring) else { return nil }
        return leases.withLock { $0[source] }
    }

    /// Whether a line may be written: any line of an input not held by a lease, or whose lease
    /// holds now; of a lapsed one, only the lines about the input itself (`session.*`, `input.*`,
    /// its metrics), never what it saw.
    public static func admits(_ route: OutputLine.Route) -> Bool {
        guard let source = route.source, let lease = lease(of: source) else { return true }
        if HostClock.monotonicNs() < lease.validUntilNs { return true }
        return route.event == "metrics" || route.event.hasPrefix("session.") || route.event.hasPrefix("input.")
    }
}
