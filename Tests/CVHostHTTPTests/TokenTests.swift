@testable import CVHostHTTP
import Testing

/// With a token: the routes with data want it (header or query), the page's own files and
/// /healthz do not (the page asks for the data with the token of its address).
@Suite("HTTP: the token")
struct TokenTests {
    @Test("the routes with data are 401 without the token or with a wrong one, and counted",
          arguments: ["/snapshot.jpg", "/stream.mjpg", "/events", "/metrics", "/controls", "/inputs", "/inputs/gate", "/analytics", "/zones/bay",
                      "/lines/door", "/tracks/detect", "/clips", "/clips/a.mp4", "/snapshots", "/snapshots/a.jpg", "/nothing"])
    func dataRoutes(path: String) throws {
        let server = EmbeddedServer(token: "s3cret")
        let none = try server.request(path)
        #expect(none.status == 401 && none.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
        #expect(try server.request(path, headers: ["Authorization: Bearer nope"]).status == 401)
        #expect(try server.request(path + "?token=s3cre").status == 401)
        #expect(server.statistics.refused(.token) == 3)
        #expect(!none.body.contains("s3cret"))
    }

    @Test("with the token as a header or in the query, the routes answer")
    func withToken() throws {
        let server = EmbeddedServer(token: "s3cret")
        #expect(try server.request("/metrics", headers: ["Authorization: Bearer s3cret"]).status == 200)
        #expect(try server.request("/controls?token=s3cret").status == 200)
        #expect(try server.request("/controls?token=s3cret", method: "POST", headers: ["Content-Type: application/json"], body: "{}").status == 200)
        // No input in this server: past the token, the route's own answer.
        #expect(try server.request("/snapshot.jpg?token=s3cret").status == 404)
    }

    @Test("the page's files and /healthz need no token: the page at /?token=T loads its script and style",
          arguments: ["/", "/index.html", "/view.js", "/view.css", "/healthz"])
    func openRoutes(path: String) throws {
        let a = try EmbeddedServer(token: "s3cret").request(path)
        #expect(a.status == 200)
    }
}
