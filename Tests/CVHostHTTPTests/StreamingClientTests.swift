@testable import CVHostHTTP
import CVHostLines
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

/// Clients of a stream that do not keep up: a picture viewer is sent fewer pictures (what comes
/// while it is behind is skipped), an event stream client is closed (its EventSource reconnects;
/// an event stream must not have holes). Nothing waits for either.
@Suite("HTTP: slow stream clients")
struct StreamingClientTests {
    static func connected() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 40000)).wait()
        return channel
    }

    static func parts(_ channel: EmbeddedChannel) -> Int {
        var n = 0
        while (try? channel.readOutbound(as: HTTPServerResponsePart.self)) != nil { n += 1 }
        return n
    }

    @Test("a viewer that is behind is skipped, not queued for: it gets the pictures that come once it takes them again")
    func slowViewer() throws {
        let channel = try Self.connected()
        let client = StreamingClient(channel: channel, whenFull: .skip)
        let picture = ByteBuffer(string: "a picture")
        #expect(client.send(picture))
        channel.isWritable = false
        for _ in 0..<5 { #expect(client.send(picture)) }  // skipped, the client kept
        channel.isWritable = true
        #expect(client.send(picture))
        #expect(Self.parts(channel) == 2)
        #expect(channel.isActive)
        _ = try? channel.finish()
    }

    @Test("an event stream client that is behind is closed at once, and forgotten by the stream")
    func slowEventClient() throws {
        let events = EventStream()
        let channel = try Self.connected()
        events.add(channel)
        #expect(events.clientCount == 1)
        let line = OutputLine(bytes: Array("{\"event\":\"metrics\"}\n".utf8), route: .init(event: "metrics", source: "s", plugin: "p"))
        events.write(line)
        #expect(Self.parts(channel) == 2)  // the replay's head (retry) and the line
        channel.isWritable = false
        events.write(line)
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
        #expect(events.clientCount == 0)
    }
}
