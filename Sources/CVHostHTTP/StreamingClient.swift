import CVHostCore
import NIOCore
import NIOHTTP1

/// A connection that is sent a stream as it comes (MJPEG parts, server-sent events), from any
/// thread. Nothing waits for it: bytes are handed to the connection only while it takes them
/// (its send buffer below the high-water mark the server sets); a client that does not keep up
/// misses what comes meanwhile, and one that has taken nothing for `stallLimitNs` is closed.
final class StreamingClient: Sendable {
    enum WhenFull: Sendable {
        /// Skip what comes while the client is behind (video: a newer frame replaces it).
        case skip
        /// Close the connection (an event stream must not have holes; EventSource reconnects).
        case close
    }

    let channel: Channel
    private let whenFull: WhenFull
    private let stalledSince = Locked<UInt64?>(nil)

    static let stallLimitNs: UInt64 = 10_000_000_000

    init(channel: Channel, whenFull: WhenFull) {
        self.channel = channel
        self.whenFull = whenFull
    }

    /// Sends `bytes` if the client takes them now. - Returns: false when the client is gone
    /// (closed, or closed now for being too slow): forget it.
    @discardableResult
    func send(_ bytes: ByteBuffer) -> Bool {
        guard channel.isActive else { return false }
        if channel.isWritable {
            stalledSince.withLock { $0 = nil }
            channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(bytes)), promise: nil)
            return true
        }
        let now = HostClock.monotonicNs()
        let since = stalledSince.withLock { s in
            if s == nil { s = now }
            return s!
        }
        if whenFull == .close || now - since >= Self.stallLimitNs {
            channel.close(promise: nil)
            return false
        }
        return true  // skipped: the client is behind
    }
}

/// The clients of one stream, added by the server and sent to by a producer thread.
final class StreamingClients: Sendable {
    private let clients = Locked<[ObjectIdentifier: StreamingClient]>([:])

    var count: Int { clients.withLock { $0.count } }

    func add(_ client: StreamingClient) {
        clients.withLock { $0[ObjectIdentifier(client)] = client }
        // Gone when the connection closes, whoever closes it.
        client.channel.closeFuture.whenComplete { [self] _ in remove(client) }
    }

    func remove(_ client: StreamingClient) {
        _ = clients.withLock { $0.removeValue(forKey: ObjectIdentifier(client)) }
    }

    /// Sends to every client that takes it now; forgets those that are gone.
    func send(_ bytes: ByteBuffer) {
        for c in clients.withLock({ Array($0.values) }) where !c.send(bytes) {
            remove(c)
        }
    }

    func closeAll() {
        for c in clients.withLock({ Array($0.values) }) { c.channel.close(promise: nil) }
    }
}
