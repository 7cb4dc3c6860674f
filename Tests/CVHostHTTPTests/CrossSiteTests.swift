@testable import CVHostHTTP
import Testing

/// What a web page in the user's browser may not do to a server on loopback: read it by DNS
/// rebinding (a foreign Host), or change something with a cross-site POST (a foreign Origin, a
/// body not declared JSON). Each refusal is one line, with its status, and is counted.
@Suite("HTTP: Host and Origin checks")
struct CrossSiteTests {
    @Test("a Host that is not a name of the server is 421 on every route, with a one-line reason naming the option, and counted",
          arguments: ["/", "/snapshot.jpg", "/stream.mjpg", "/events", "/metrics", "/controls", "/healthz", "/view.js"])
    func foreignHost(path: String) throws {
        let server = EmbeddedServer()
        let a = try server.request(path, headers: ["Host: evil.example:8080"])
        #expect(a.status == 421)
        #expect(a.body.contains("Host 'evil.example:8080' is not a name of this server") && a.body.contains("--http-allow-host evil.example"))
        #expect(a.body.split(separator: "\n").count == 1)
        #expect(server.statistics.refused(.host) == 1)
    }

    @Test("the server's names are served: loopback names and addresses, any IP address, the --http name, --http-allow-host names",
          arguments: ["127.0.0.1:8080", "localhost:8080", "LOCALHOST.", "[::1]:8080", "cam.localhost:8080", "192.168.1.20:8080",
                      "[fe80::1]", "gate-1.lan:8080", "proxy.example"])
    func ownNames(host: String) throws {
        let server = EmbeddedServer(listenHost: "gate-1.lan", allowedHosts: ["Proxy.Example"])
        #expect(try server.request("/healthz", headers: ["Host: \(host)"]).status == 200)
        #expect(server.statistics.refused(.host) == 0)
    }

    @Test("--http-allow-host '*' turns the Host check off; a request with no Host (a program, HTTP/1.0) is not refused for it")
    func anyHost() throws {
        #expect(try EmbeddedServer(allowedHosts: ["*"]).request("/healthz", headers: ["Host: evil.example"]).status == 200)
        let server = EmbeddedServer()
        let channel = try server.connect()
        #expect(try EmbeddedServer.send("GET /healthz HTTP/1.0\r\n\r\n", on: channel).status == 200)
        #expect(try server.request("/healthz", headers: ["Host: a", "Host: b"]).status == 400)
        #expect(try server.request("/healthz", headers: ["Host: evil.example:99999"]).status == 400)
    }

    static let change = #"{"plugin":"barcode","enabled":false}"#

    @Test("POST /controls: another site's Origin is 403, a body not declared JSON is 415 (a simple request a page sends without asking); neither reaches the run")
    func crossSitePost() throws {
        let server = EmbeddedServer()
        let refused: [([String], Int, HTTPServerStatistics.Refusal)] = [
            (["Origin: http://evil.example", "Content-Type: text/plain"], 403, .origin),
            (["Origin: http://evil.example", "Content-Type: application/json"], 403, .origin),
            (["Origin: null", "Content-Type: application/json"], 403, .origin),
            (["Origin: http://127.0.0.1:3000", "Content-Type: application/json"], 403, .origin),
            (["Origin: http://localhost:8080", "Content-Type: application/json"], 403, .origin),
            (["Content-Type: text/plain"], 415, .contentType),
            (["Content-Type: application/x-www-form-urlencoded"], 415, .contentType),
            ([], 415, .contentType),
        ]
        for (headers, status, reason) in refused {
            let before = server.statistics.refused(reason)
            let a = try server.request("/controls", method: "POST", headers: headers, body: Self.change)
            #expect(a.status == status, "\(headers)")
            #expect(a.body.split(separator: "\n").count == 1 && a.body.contains("\"error\""), "\(a.body)")
            #expect(server.statistics.refused(reason) == before + 1, "\(headers)")
        }
        #expect(server.service.controlChanges.isEmpty)
    }

    @Test("POST /controls as JSON from the server's own page, or from a program (no Origin), is applied")
    func ownPost() throws {
        let server = EmbeddedServer(allowedHosts: ["cam.example"])
        let accepted: [[String]] = [
            ["Origin: http://127.0.0.1:8080", "Content-Type: application/json"],
            ["Origin: http://127.0.0.1:8080", "Content-Type: application/json; charset=utf-8"],
            ["Content-Type: application/json"],
            // A page served under an allowed name (a reverse proxy adding TLS).
            ["Origin: https://cam.example", "Content-Type: application/json"],
        ]
        for headers in accepted {
            #expect(try server.request("/controls", method: "POST", headers: headers, body: Self.change).status == 200, "\(headers)")
        }
        #expect(try server.request("/controls", method: "POST", headers: ["Host: cam.example", "Origin: https://cam.example",
                                                                  "Content-Type: application/json"], body: Self.change).status == 200)
        #expect(server.service.controlChanges == Array(repeating: Self.change, count: 5))
    }

    @Test("every answer says nosniff and no-referrer; the page has a Content-Security-Policy and may not be framed")
    func headers() throws {
        let server = EmbeddedServer()
        let page = try server.request("/")
        #expect(page.status == 200 && page.body.contains("view.js"))
        let csp = try #require(page.headers["content-security-policy"])
        #expect(csp.contains("script-src 'self'") && csp.contains("connect-src 'self'") && csp.contains("frame-ancestors 'none'"))
        #expect(page.headers["x-frame-options"] == "DENY")
        for a in [page, try server.request("/metrics"), try server.request("/nothing"), try server.request("/x", headers: ["Host: evil.example"])] {
            #expect(a.headers["x-content-type-options"] == "nosniff" && a.headers["referrer-policy"] == "no-referrer", "\(a.status)")
        }
    }
}
