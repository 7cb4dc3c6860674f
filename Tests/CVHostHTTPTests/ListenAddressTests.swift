@testable import CVHostHTTP
import NIOCore
import Testing

/// Without a token the server listens only on loopback, judged by the address a name resolves to
/// (the address bound), not by how the name looks.
@Suite("HTTP: loopback, by address")
struct ListenAddressTests {
    @Test("loopback addresses", arguments: ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"])
    func loopback(ip: String) throws {
        #expect(HTTPServer.isLoopback(try SocketAddress(ipAddress: ip, port: 80)))
    }

    @Test("addresses beyond loopback", arguments: ["0.0.0.0", "::", "192.168.1.2", "10.0.0.1", "::ffff:10.0.0.1", "fe80::1"])
    func beyond(ip: String) throws {
        #expect(!HTTPServer.isLoopback(try SocketAddress(ipAddress: ip, port: 80)))
    }

    @Test("settings: localhost and 127.0.0.1 need no token; 0.0.0.0 does, unless it has one; the refusal says the name's address")
    func settings() throws {
        #expect(HTTPServer.Settings(host: "localhost", port: 8080, token: nil).refusal == nil)
        #expect(HTTPServer.Settings(host: "127.0.0.1", port: 8080, token: nil).refusal == nil)
        #expect(HTTPServer.Settings(host: "0.0.0.0", port: 8080, token: "t").refusal == nil)
        let r = try #require(HTTPServer.Settings(host: "0.0.0.0", port: 8080, token: nil).refusal)
        #expect(r.contains("listens beyond this machine") && r.contains("--http-token-file"))
        let named = try #require(HTTPServer.Settings.refusal(host: "127.cam.lan", port: 8080,
                                                             address: try SocketAddress(ipAddress: "0.0.0.0", port: 8080)))
        #expect(named.contains("(127.cam.lan is 0.0.0.0)"))
    }
}
