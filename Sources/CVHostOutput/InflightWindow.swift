/// The MQTT sink's lines between its queue and the broker's acknowledgements (QoS 1, at least
/// once): at most `capacity` in flight (published, not yet acknowledged), and the lines that were
/// in flight on a connection that was lost, which are published again first, in their order, on
/// the next one. Those are never dropped for room: the broker may have them already, so only
/// lines no broker has seen are dropped (from the queue), and a drop count is exactly a loss count.
/// Used by the sink's thread alone.
struct InflightWindow {
    let capacity: Int
    private var inflight: [(mid: Int32, line: OutputLine)] = []
    private var resend: [OutputLine] = []

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Lines that may be published now besides those to send again.
    var room: Int { max(0, capacity - inflight.count - resend.count) }
    /// Lines in flight or to be sent again: not yet delivered, not droppable.
    var unacknowledged: Int { inflight.count + resend.count }
    var isEmpty: Bool { inflight.isEmpty && resend.isEmpty }

    /// The lines to send again that fit the window now, in order (taken from the resend list).
    mutating func takeResend() -> [OutputLine] {
        let n = min(resend.count, capacity - inflight.count)
        defer { resend.removeFirst(n) }
        return Array(resend.prefix(n))
    }

    /// A line was published with message id `mid`.
    mutating func published(_ line: OutputLine, mid: Int32) {
        inflight.append((mid, line))
    }

    /// Lines that could not be published (the connection is going): first in line for the next one.
    mutating func notPublished(_ lines: [OutputLine]) {
        resend = lines + resend
    }

    /// The broker acknowledged these message ids. - Returns: how many lines are now delivered
    /// (an id that is not in flight counts for nothing).
    mutating func acknowledge(_ mids: [Int32]) -> Int {
        guard !mids.isEmpty else { return 0 }
        let ids = Set(mids)
        let before = inflight.count
        inflight.removeAll { ids.contains($0.mid) }
        return before - inflight.count
    }

    /// The connection was lost: what was in flight is sent again first, in order, then what was
    /// already waiting to be.
    mutating func connectionLost() {
        resend = inflight.map(\.line) + resend
        inflight.removeAll()
    }

    /// The end: every line still here is given up. - Returns: how many.
    mutating func abandon() -> Int {
        defer {
            inflight.removeAll()
            resend.removeAll()
        }
        return unacknowledged
    }
}

/// A reconnection's wait: 0.5 s, doubling after each failure up to 30 s, back to 0.5 s once connected.
struct ReconnectBackoff {
    static let firstNs: UInt64 = 500_000_000
    static let longestNs: UInt64 = 30_000_000_000
    private(set) var nextNs = ReconnectBackoff.firstNs

    /// The wait before the next try (and the one after that grows).
    mutating func failed() -> UInt64 {
        defer { nextNs = min(nextNs * 2, Self.longestNs) }
        return nextNs
    }

    mutating func connected() { nextNs = Self.firstNs }
}
