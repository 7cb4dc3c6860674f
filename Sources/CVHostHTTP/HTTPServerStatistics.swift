import CVHostCore
import CVHostLines

/// What the server refused and closed, and how many connections it has: counted for /metrics
/// (`cvhost_http_*`), so that an attack, or a client it wrongly refuses, shows there.
public final class HTTPServerStatistics: Sendable {
    /// Why a request was refused (the `reason` label).
    public enum Refusal: String, CaseIterable, Sendable {
        /// Its Host is no name of this server (DNS rebinding: 421).
        case host
        /// It changes something and its Origin is another site's (403).
        case origin
        /// It changes something and its body is not declared JSON (415).
        case contentType = "content_type"
        /// The server wants a token and it had none, or a wrong one (401).
        case token
        /// A clip or snapshot asked for while `ConnectionLimits.maxFileAnswers` were being sent (503).
        case filesBusy = "files_busy"
        /// A live picture asked for while `ConnectionLimits.maxViewers` watched (503).
        case viewersBusy = "viewers_busy"
    }

    /// Why the server closed a connection on its own (the `reason` label).
    public enum Closing: String, CaseIterable, Sendable {
        /// No whole request within `ConnectionLimits.requestTimeout` (idle, or sending slowly).
        case requestTimeout = "request_timeout"
        /// Refused at once (503): `ConnectionLimits.maxConnections` were open.
        case connectionLimit = "connection_limit"
        /// A file's reader took nothing of it for `ConnectionLimits.fileStallSeconds`.
        case stalled
    }

    private struct Counts {
        var refused: [Refusal: UInt64] = [:]
        var closed: [Closing: UInt64] = [:]
        var open = 0
        var fileAnswers = 0
        var viewers = 0
    }
    private let counts = Locked(Counts())

    public init() {}

    func count(_ refusal: Refusal) { counts.withLock { $0.refused[refusal, default: 0] += 1 } }
    func count(_ closing: Closing) { counts.withLock { $0.closed[closing, default: 0] += 1 } }

    /// Takes a place for a new connection. - Returns: false when `max` are open (the connection is refused).
    func open(max: Int) -> Bool { take(\.open, max: max) }

    func closed() { counts.withLock { $0.open -= 1 } }

    /// Takes a place for a file being sent. - Returns: false when `max` are being sent.
    func startFileAnswer(max: Int) -> Bool { take(\.fileAnswers, max: max) }

    func fileAnswerDone() { counts.withLock { $0.fileAnswers -= 1 } }

    /// Takes a place for a viewer of the live picture. - Returns: false when `max` watch.
    func startViewer(max: Int) -> Bool { take(\.viewers, max: max) }

    func viewerDone() { counts.withLock { $0.viewers -= 1 } }

    /// One more of `what`, unless `max` are there already.
    private func take(_ what: WritableKeyPath<Counts, Int>, max: Int) -> Bool {
        counts.withLock { c in
            guard c[keyPath: what] < max else { return false }
            c[keyPath: what] += 1
            return true
        }
    }

    public var fileAnswers: Int { counts.withLock { $0.fileAnswers } }

    public var openConnections: Int { counts.withLock { $0.open } }
    public func refused(_ refusal: Refusal) -> UInt64 { counts.withLock { $0.refused[refusal] ?? 0 } }
    public func closed(_ closing: Closing) -> UInt64 { counts.withLock { $0.closed[closing] ?? 0 } }

    /// The server's part of /metrics.
    public func expose(into p: inout PrometheusExposition) {
        let c = counts.withLock { $0 }
        for r in Refusal.allCases {
            p.counter("cvhost_http_requests_refused_total",
                      "Requests refused: Host not a name of this server (host), another site's Origin (origin), a change not sent as JSON (content_type), no or a wrong token (token), too many files (files_busy) or live pictures (viewers_busy) being sent.",
                      [("reason", r.rawValue)], c.refused[r] ?? 0)
        }
        for r in Closing.allCases {
            p.counter("cvhost_http_connections_closed_total",
                      "Connections the server closed on its own: no whole request in time (request_timeout), too many open (connection_limit), a file's reader that took nothing for 20 s (stalled).",
                      [("reason", r.rawValue)], c.closed[r] ?? 0)
        }
        p.gauge("cvhost_http_connections_open", "Connections open now (viewers and event streams among them).", [], Double(c.open))
        p.gauge("cvhost_http_file_answers", "Clips and snapshots being sent now.", [], Double(c.fileAnswers))
        p.gauge("cvhost_http_viewers", "Live pictures (/stream.mjpg) being sent now.", [], Double(c.viewers))
    }
}
