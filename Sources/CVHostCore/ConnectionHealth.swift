/// How a live device's connection fares, for its input's health (`GET /inputs`, /metrics): how
/// often it came back after being lost, and while it is away, why and when it is tried next.
/// The device's stream tells it (a network stream's reconnections, a camera unplugged and back).
public final class ConnectionHealth: Sendable {
    public struct Snapshot: Sendable {
        /// Times the device came back after it was lost.
        public var reconnects: UInt64 = 0
        /// While it is away: why.
        public var problem: String?
        /// While it is away: when the next try is (wall clock, ns), when the device knows.
        public var nextTryWallNs: Int64?
        var away = false
    }

    private let state = Locked(Snapshot())

    public init() {}

    public var snapshot: Snapshot { state.withLock { $0 } }

    /// Lost, or still away after a try: `why`, and the next try's time when known.
    public func away(_ why: String, nextTryWallNs: Int64? = nil) {
        state.withLock { s in
            s.away = true
            s.problem = why
            s.nextTryWallNs = nextTryWallNs
        }
    }

    /// Back: connected again.
    public func back() {
        state.withLock { s in
            if s.away { s.reconnects += 1 }
            s.away = false
            s.problem = nil
            s.nextTryWallNs = nil
        }
    }
}

/// A device whose connection may be lost and found again while it runs (a network stream, a camera).
public protocol ConnectionHealthReporting: AnyObject {
    var connectionHealth: ConnectionHealth { get }
}
