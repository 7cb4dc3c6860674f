import CVHostLines
/// A line a broker sink has taken and not yet delivered: where it is in the sink's spool (nil
/// without one), and whether it was sent before (by this run, or by an earlier one that spooled it).
struct PendingLine {
    let line: OutputLine
    /// Its place in the order the sink took lines.
    var order: UInt64
    var position: Spool.Position?
    var sentBefore = false
}

/// A broker sink's lines between its queue (or spool) and the broker's acknowledgements (at
/// least once): at most `capacity` in flight (published, not yet acknowledged), and the lines to
/// publish again first, in their order: those in flight on a connection that was lost, and those
/// the broker said it could not take (a delivery report's error). Those are never dropped for
/// room: the broker may have them already, so only lines no broker has seen are dropped (from the
/// queue), and a drop count is exactly a loss count. Ids are the connection's (MQTT's message ids,
/// or the sink's own count). Used by the sink's thread alone.
struct InflightWindow {
    let capacity: Int
    private var inflight: [(id: Int64, line: PendingLine)] = []
    private var resend: [PendingLine] = []

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Lines that may be published now besides those to send again.
    var room: Int { max(0, capacity - inflight.count - resend.count) }
    /// Lines in flight or to be sent again: not yet delivered, not droppable.
    var unacknowledged: Int { inflight.count + resend.count }
    var isEmpty: Bool { inflight.isEmpty && resend.isEmpty }

    /// The lines to send again that fit the window now, in order (taken from the resend list).
    mutating func takeResend() -> [PendingLine] {
        let n = max(0, min(resend.count, capacity - inflight.count))
        defer { resend.removeFirst(n) }
        return Array(resend.prefix(n))
    }

    /// A line was published with id `id`.
    mutating func published(_ line: PendingLine, id: Int64) {
        var line = line
        line.sentBefore = true
        inflight.append((id, line))
    }

    /// Lines that could not be published (the connection is going): first in line for the next one.
    mutating func notPublished(_ lines: [PendingLine]) {
        resend = lines + resend
    }

    /// The broker acknowledged these ids. - Returns: the lines now delivered (an id that is not in
    /// flight counts for nothing).
    mutating func acknowledge(_ ids: [Int64]) -> [PendingLine] {
        guard !ids.isEmpty else { return [] }
        let done = Set(ids)
        let delivered = inflight.filter { done.contains($0.id) }.map(\.line)
        inflight.removeAll { done.contains($0.id) }
        return delivered
    }

    /// The broker could not take these (a delivery failed): they are sent again, in their order,
    /// before what waits. - Returns: how many were in flight.
    mutating func failed(_ ids: [Int64]) -> Int {
        guard !ids.isEmpty else { return 0 }
        let bad = Set(ids)
        let again = inflight.filter { bad.contains($0.id) }.map(\.line)
        inflight.removeAll { bad.contains($0.id) }
        resend = (again + resend).sorted { $0.order < $1.order }
        return again.count
    }

    /// The connection was lost: what was in flight is sent again first, in order, then what was
    /// already waiting to be.
    mutating func connectionLost() {
        resend = inflight.map(\.line) + resend
        inflight.removeAll()
    }

    /// Where the first line not yet delivered is in the spool (nil: every line taken is delivered).
    var firstUndelivered: Spool.Position? {
        let inFlight = inflight.lazy.compactMap(\.line.position).min()
        let waiting = resend.lazy.compactMap(\.position).min()
        switch (inFlight, waiting) {
        case let (a?, b?): return min(a, b)
        case let (a, b): return a ?? b
        }
    }

    /// The end: every line still here is given up. - Returns: how many, and how many of them
    /// are in no spool (lost, where the others wait on disk for the next run).
    mutating func abandon() -> (all: Int, notSpooled: Int) {
        defer {
            inflight.removeAll()
            resend.removeAll()
        }
        let notSpooled = inflight.count { $0.line.position == nil } + resend.count { $0.position == nil }
        return (unacknowledged, notSpooled)
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
