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
    /// Clips and snapshots being sent at once (each a descriptor, no memory: `FileSender`); the
    /// next request for one is answered 503 with Retry-After.
    public var maxFileAnswers: Int
    /// Viewers of the live picture at once (each holds up to the connection's high-water mark,
    /// 1 MB, while behind); the next is answered 503.
    public var maxViewers: Int
    /// A file's reader that takes nothing of it for this many seconds is closed (its place freed).
    public var fileStallSeconds: Double

    public init(requestTimeout: Double = 10, maxConnections: Int = ConnectionLimits.defaultMaxConnections(), maxFileAnswers: Int = 32,
                maxViewers: Int = 32, fileStallSeconds: Double = 20) {
        self.requestTimeout = requestTimeout
        self.maxConnections = maxConnections
        self.maxFileAnswers = maxFileAnswers
        self.maxViewers = maxViewers
        self.fileStallSeconds = fileStallSeconds
    }

    /// A quarter of the process's descriptor limit (the rest is for cameras, outputs and plugin
    /// workers), from 16 to 256: 256 with the usual limit of 1024.
    public static func defaultMaxConnections() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < 1 << 20 else { return 256 }
        return min(256, max(16, Int(limit.rlim_cur / 4)))
    }
}
