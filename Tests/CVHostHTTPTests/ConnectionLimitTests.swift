@testable import CVHostHTTP
import CVHostTestSupport
import Foundation
import Glibc
import NIOCore
import NIOEmbedded
import Testing

/// Connections that would keep the server's descriptors for ever: idle, slowloris (a byte a
/// second), after a 400; and too many at once. On NIOEmbedded, whose clock moves only when the
/// test moves it; then the same on real loopback sockets.
@Suite("HTTP: connection deadlines and the connection limit")
struct ConnectionLimitTests {
    static func advance(_ channel: EmbeddedChannel, seconds: Double) {
        channel.embeddedEventLoop.advanceTime(by: .nanoseconds(Int64(seconds * 1e9)))
    }

    @Test("an idle connection is closed 10 s after it opened, not before, and counted")
    func idle() throws {
        let server = EmbeddedServer()
        let channel = try server.connect()
        Self.advance(channel, seconds: 9.9)
        #expect(channel.isActive)
        Self.advance(channel, seconds: 0.2)
        #expect(!channel.isActive)
        #expect(server.statistics.closed(.requestTimeout) == 1)
        #expect(server.statistics.openConnections == 0)
    }

    @Test("a slowloris connection (a byte of its header a second) is closed 10 s after it opened")
    func slowloris() throws {
        let server = EmbeddedServer()
        let channel = try server.connect()
        for byte in "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: aaaa".utf8.prefix(9) {
            try channel.writeInbound(ByteBuffer(bytes: [byte]))
            Self.advance(channel, seconds: 1)
            #expect(channel.isActive)
        }
        Self.advance(channel, seconds: 1.1)
        #expect(!channel.isActive)
    }

    @Test("after a 400 (bytes that are not HTTP) the connection is closed at once, not at the deadline")
    func afterBadRequest() throws {
        let server = EmbeddedServer()
        let channel = try server.connect()
        _ = try? channel.writeInbound(ByteBuffer(string: "\u{1}\u{2} not http\r\n\r\n"))
        #expect(EmbeddedServer.written(channel).hasPrefix("HTTP/1.1 400"))
        #expect(!channel.isActive)
    }

    @Test("a kept-alive connection gets 10 s after each answer for its next request")
    func keepAlive() throws {
        let server = EmbeddedServer()
        let channel = try server.connect()
        Self.advance(channel, seconds: 8)
        #expect(try EmbeddedServer.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", on: channel).status == 200)
        Self.advance(channel, seconds: 8)
        #expect(try EmbeddedServer.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", on: channel).status == 200)
        Self.advance(channel, seconds: 9.9)
        #expect(channel.isActive)
        Self.advance(channel, seconds: 0.2)
        #expect(!channel.isActive)
    }

    @Test("a stream, once started, is not closed by the request deadline")
    func stream() throws {
        let server = EmbeddedServer()
        let channel = try server.connect()
        try channel.writeInbound(ByteBuffer(string: "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
        #expect(EmbeddedServer.written(channel).contains("text/event-stream"))
        Self.advance(channel, seconds: 120)
        #expect(channel.isActive)
        #expect(server.statistics.closed(.requestTimeout) == 0)
        _ = try channel.finish()
    }

    @Test("beyond the limit a connection is answered 503 in one line and closed; a closed one frees its place")
    func limit() throws {
        let server = EmbeddedServer(limits: ConnectionLimits(requestTimeout: 10, maxConnections: 2))
        let a = try server.connect(), b = try server.connect()
        let c = try server.connect()
        let refusal = Answer(EmbeddedServer.written(c))
        #expect(refusal.status == 503 && refusal.body.contains("too many connections (2)"))
        #expect(!c.isActive)
        #expect(server.statistics.closed(.connectionLimit) == 1)
        // The two open ones still answer.
        #expect(try EmbeddedServer.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", on: a).status == 200)
        _ = try b.close().wait()
        b.embeddedEventLoop.run()
        #expect(server.statistics.openConnections == 1)
        let d = try server.connect()
        #expect(try EmbeddedServer.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", on: d).status == 200)
        _ = try? a.finish()
        _ = try? d.finish()
    }

    @Test("the default limit is a quarter of the descriptor limit, from 16 to 256")
    func defaultLimit() {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let expected = limit.rlim_cur >= 1 << 20 ? 256 : min(256, max(16, Int(limit.rlim_cur / 4)))
        #expect(ConnectionLimits.defaultMaxConnections() == expected)
    }
}
