@testable import CVHostHTTP
import CVHostCore
import CVHostTestSupport
import Foundation
import Glibc
import Testing

/// The server on real loopback sockets: what the kernel and SwiftNIO's accept loop add to the
/// handlers' part (tested on NIOEmbedded): connections beyond the limit refused while those
/// open still answer, an idle connection closed.
@Suite("HTTP: the server on loopback sockets")
struct ServerSocketTests {
    static func start(_ limits: ConnectionLimits, clips: [String: String] = [:]) throws -> HTTPServer {
        try HTTPServer(HTTPServer.Settings(host: "127.0.0.1", port: 0, token: nil, limits: limits),
                       service: RecordingService(clips: clips), previews: [], events: EventStream())
    }

    /// A TCP connection to 127.0.0.1:port whose reads give up after `timeout` seconds.
    static func connect(_ port: Int, timeout: Int = 30, receiveBuffer: Int32? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        a.sin_port = in_port_t(UInt16(port).bigEndian)
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { close(fd); throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return fd
    }

    /// Reads until the server closes, or until `until` is in what was read; nil when a read timed out.
    static func read(_ fd: Int32, until: String? = nil) -> String? {
        var text = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = Glibc.read(fd, &chunk, chunk.count)
            if n == 0 { return String(decoding: text, as: UTF8.self) }
            if n < 0 { return errno == EINTR ? nil : (errno == EAGAIN ? nil : String(decoding: text, as: UTF8.self)) }
            text += chunk[..<n]
            if let until, String(decoding: text, as: UTF8.self).contains(until) { return String(decoding: text, as: UTF8.self) }
        }
    }

    static func send(_ fd: Int32, _ text: String) {
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
    }

    @Test("with the limit reached, the next connection is answered 503 and closed while the open ones still answer /healthz")
    func limit() throws {
        let server = try Self.start(ConnectionLimits(requestTimeout: 120, maxConnections: 4))
        defer { server.stop() }
        let open = try (0..<4).map { _ in try Self.connect(server.port) }
        defer { open.forEach { close($0) } }
        // Accepted by the server (not only queued by the kernel) before the next one comes.
        let deadline = HostClock.monotonicNs() + 30_000_000_000
        while server.statistics.openConnections < 4 && HostClock.monotonicNs() < deadline { usleep(10_000) }
        #expect(server.statistics.openConnections == 4)

        let fifth = try Self.connect(server.port)
        defer { close(fifth) }
        let refused = try #require(Self.read(fifth), "the refused connection was not closed")
        #expect(refused.hasPrefix("HTTP/1.1 503") && refused.contains("too many connections (4)"))
        #expect(server.statistics.closed(.connectionLimit) == 1)

        Self.send(open[0], "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let health = try #require(Self.read(open[0], until: "\"ok\"}"))
        #expect(health.hasPrefix("HTTP/1.1 200"))
    }

    @Test("an idle connection is closed by the server once its request timeout has passed")
    func idle() throws {
        let server = try Self.start(ConnectionLimits(requestTimeout: 1, maxConnections: 4))
        defer { server.stop() }
        let fd = try Self.connect(server.port)
        defer { close(fd) }
        let start = HostClock.monotonicNs()
        // A read that ends (the server closed) rather than timing out after 30 s: the deadline works.
        let text = try #require(Self.read(fd), "still open after 30 s")
        #expect(text.isEmpty)
        #expect(HostClock.monotonicNs() - start >= 900_000_000)
        #expect(server.statistics.closed(.requestTimeout) == 1)
    }

    @Test("a clip is sent from its file: whole (200, every byte), a range (206), the last 0 bytes 416; readers that take nothing hold their places until closed as stalled, the next asker meanwhile 503 with Retry-After; a bad request is closed at once")
    func files() throws {
        let path = TestFolders.make("served") + "/clip.mp4"
        let bytes = (0..<(12 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 13) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let server = try Self.start(ConnectionLimits(requestTimeout: 120, maxConnections: 16, maxFileAnswers: 2, fileStallSeconds: 2),
                                    clips: ["clip.mp4": path])
        defer { server.stop() }
        func get(_ fd: Int32, _ extra: String = "") { Self.send(fd, "GET /clips/clip.mp4 HTTP/1.1\r\nHost: 127.0.0.1\r\n\(extra)\r\n") }

        let whole = try Self.connect(server.port)
        get(whole, "Connection: close\r\n")
        let all = Self.readBytes(whole) ?? []
        close(whole)
        let split = try #require(all.firstRange(of: Array("\r\n\r\n".utf8)), "\(all.count) bytes")
        let head = String(decoding: all[..<split.lowerBound], as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 200") && head.lowercased().contains("content-length: \(bytes.count)"), "\(head)")
        #expect(Array(all[split.upperBound...]) == bytes)

        let part = try Self.connect(server.port)
        get(part, "Range: bytes=1000-1999\r\nConnection: close\r\n")
        let ranged = Answer(try #require(Self.read(part)))
        close(part)
        #expect(ranged.status == 206 && ranged.headers["content-range"] == "bytes 1000-1999/\(bytes.count)" && ranged.headers["content-length"] == "1000")
        let none = try Self.connect(server.port)
        get(none, "Range: bytes=-0\r\n")
        #expect(Answer(try #require(Self.read(none, until: "}\n"))).status == 416)
        close(none)

        // Two readers that take nothing (a small receive buffer): the third asker is refused while they hold.
        let stalled = try (0..<2).map { _ in try Self.connect(server.port, receiveBuffer: 4096) }
        stalled.forEach { get($0) }
        let deadline = HostClock.monotonicNs() + 30_000_000_000
        while server.statistics.fileAnswers < 2 && HostClock.monotonicNs() < deadline { usleep(10_000) }
        let third = try Self.connect(server.port)
        get(third)
        let busy = Answer(try #require(Self.read(third, until: "}\n")))
        #expect(busy.status == 503 && busy.headers["retry-after"] == "5" && busy.body.contains("2 clips and snapshots are being sent"), "\(busy)")
        #expect(server.statistics.refused(HTTPServerStatistics.Refusal.filesBusy) == 1)
        // Closed as stalled (2 s without taking a slice), their places free again. (The client may
        // not see it: the close waits behind what its full window has not taken.)
        while server.statistics.fileAnswers > 0 && HostClock.monotonicNs() < deadline { usleep(10_000) }
        #expect(server.statistics.fileAnswers == 0 && server.statistics.closed(HTTPServerStatistics.Closing.stalled) == 2)
        stalled.forEach { close($0) }
        get(third, "Range: bytes=0-9\r\n")
        #expect(Answer(try #require(Self.read(third, until: "\r\n\r\n"))).status == 206)
        close(third)

        let bad = try Self.connect(server.port)
        Self.send(bad, "\u{1}\u{2} not http\r\n\r\n")
        // Closed at once: the read ends though the request timeout is 120 s.
        #expect(try #require(Self.read(bad)).hasPrefix("HTTP/1.1 400"))
        close(bad)
    }

    /// Reads bytes until the server closes (nil when a read timed out).
    static func readBytes(_ fd: Int32) -> [UInt8]? {
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = Glibc.read(fd, &chunk, chunk.count)
            if n == 0 { return bytes }
            if n < 0 { return errno == EINTR || errno == EAGAIN ? nil : bytes }
            bytes += chunk[..<n]
        }
    }
}
