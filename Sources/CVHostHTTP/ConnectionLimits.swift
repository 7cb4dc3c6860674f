import Glibc

/// What one client may hold of the server. Without these, idle sockets, slowloris clients (a
/// byte a second) and sockets left open after a 400 were kept for ever: a thousand of them used
/// up the process's descriptors, and then a plugin's worker could not be restarted.
public struct ConnectionLimits: Sendable {
    /// A connection must send a whole request within this many seconds of opening, or of the end
    /// of its previous answer; else it is closed. A stream (/stream.mjpg, /events) is exempt once
    /// it has started: its client is watched for reading instead (`StreamingClient`).
    public var requestTimeout: Double
    /// Connections open at once; the next one is answered 503 and closed.
    public var maxConnections: Int

    public init(requestTimeout: Double = 10, maxConnections: Int = ConnectionLimits.defaultMaxConnections()) {
        self.requestTimeout = requestTimeout
        self.maxConnections = maxConnections
    }

    /// A quarter of the process's descriptor limit (the rest is for cameras, outputs and plugin
    /// workers), from 16 to 256: 256 with the usual limit of 1024.
    public static func defaultMaxConnections() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < 1 << 20 else { return 256 }
        return min(256, max(16, Int(limit.rlim_cur / 4)))
    }
}
