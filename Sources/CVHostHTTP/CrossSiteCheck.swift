import Glibc
import NIOHTTP1

/// What keeps the web pages a user opens from using the server. A server on loopback is still
/// reached by every page the user's browser shows, two ways (the checks Jupyter, the Docker
/// daemon and Chrome's debugging port came to make):
///
/// - **DNS rebinding**: a page's own name is made to resolve to 127.0.0.1, so the browser
///   treats the server as that page's origin and lets it read the picture, /events and
///   /controls. Its requests carry `Host: that-name`, so a Host that is no name of this server is
///   refused (421). Names of this server: IP addresses (a page whose URL is an address is served
///   by that address: no rebinding is possible), `localhost` and `*.localhost` (which browsers
///   resolve to loopback themselves), the name `--http` was given, and `--http-allow-host` names.
/// - **Cross-site requests**: any page may send a "simple" POST (text/plain, a form) to any
///   address without asking. A request that changes something is refused when its Origin is not
///   the server's own (403) or a name the user allowed, and unless its body is declared
///   `application/json` (415): that content type makes a browser ask first (a CORS preflight,
///   OPTIONS), which this server never grants.
///
/// A request with no Host or no Origin comes from a program (curl, a scraper), not a browser's
/// page: it is not refused here (the token, when there is one, still applies).
struct CrossSiteCheck: Sendable {
    /// Lower-case names allowed as Host besides loopback names and addresses; "*" allows any.
    let names: Set<String>
    /// The names the user allowed (`--http-allow-host`): pages served under them are the
    /// server's own too (a reverse proxy's name), whatever the port.
    let allowed: Set<String>

    /// - Parameters: listenHost: `--http`'s address or name; allowed: `--http-allow-host` names.
    init(listenHost: String, allowed: [String]) {
        self.allowed = Set(allowed.map { Self.normalized($0) }.filter { !$0.isEmpty })
        names = self.allowed.union([Self.normalized(listenHost)])
    }

    /// Why `head` is refused, or nil.
    func refusal(_ head: HTTPRequestHead) -> HTTPRefusal? {
        let hosts = head.headers["host"]
        if hosts.count > 1 { return HTTPRefusal(.host, 400, "the request has \(hosts.count) Host headers: send one") }
        var authority: Authority?
        if let host = hosts.first {
            guard let a = Authority(host) else { return HTTPRefusal(.host, 400, "Host '\(Self.printable(host))' is not a host name and port") }
            guard isName(a.host) else {
                return HTTPRefusal(.host, 421, "Host '\(Self.printable(host))' is not a name of this server (a page may have made its own name point here): "
                                   + "to reach it by this name, start cvhost with --http-allow-host \(Self.printable(a.host))")
            }
            authority = a
        }
        guard Self.changesState(head.method) else { return nil }
        if let origin = head.headers.first(name: "origin") {
            guard isOwn(origin: origin, host: authority) else {
                return HTTPRefusal(.origin, 403, "Origin '\(Self.printable(origin))' is another site's: a page may change something here "
                                   + "only when this server served it (a page served elsewhere: --http-allow-host ITS-NAME)")
            }
        }
        // A POST of a form's or text's type is sent by any page without asking first; a JSON type,
        // PUT and DELETE make a browser ask (a preflight, which this server never allows).
        let type = head.headers.first(name: "content-type")?.split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard head.method != .POST || type == "application/json" else {
            return HTTPRefusal(.contentType, 415, "\(head.method) \(Self.printable(head.uri)) takes a JSON body sent with Content-Type: application/json")
        }
        return nil
    }

    /// Whether `host` (lower case, no brackets) names this server.
    func isName(_ host: String) -> Bool {
        if names.contains("*") || names.contains(host) { return true }
        if host == "localhost" || host.hasSuffix(".localhost") { return true }
        return Self.isAddress(host)
    }

    /// Whether an Origin is the server's own: the request's own Host (same name and port, either
    /// scheme: a reverse proxy may add TLS), or a name the user allowed.
    private func isOwn(origin: String, host: Authority?) -> Bool {
        guard let o = Origin(origin) else { return false }  // "null" (a sandboxed page, a file) included
        if allowed.contains("*") || allowed.contains(o.host) { return true }
        guard let host, host.host == o.host else { return false }
        return host.port.map { $0 == o.port } ?? (o.port == o.defaultPort)
    }

    /// Methods that may change something: all but GET, HEAD and OPTIONS.
    static func changesState(_ method: HTTPMethod) -> Bool {
        ![.GET, .HEAD, .OPTIONS].contains(method)
    }

    static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// A name as compared: lower case, without IPv6 brackets or a final dot.
    static func normalized(_ name: String) -> String {
        var n = name.lowercased()
        if n.hasPrefix("["), n.hasSuffix("]") { n = String(n.dropFirst().dropLast()) }
        if n.hasSuffix(".") { n.removeLast() }
        return n
    }

    /// A header's text as a message shows it: printable ASCII, at most 100 characters.
    static func printable(_ text: String) -> String {
        let s = String(text.unicodeScalars.map { (0x20..<0x7f).contains($0.value) ? Character($0) : "?" })
        return s.count > 100 ? String(s.prefix(100)) + "…" : s
    }

    /// `host[:port]` of a Host header (IPv6 in brackets).
    struct Authority {
        let host: String
        let port: Int?

        init?(_ text: String) {
            var rest = Substring(text.trimmingCharacters(in: .whitespaces))
            var port: Int?
            if let colon = rest.lastIndex(of: ":"), !rest[colon...].contains("]"), rest.hasPrefix("[") || !rest[..<colon].contains(":") {
                guard let p = Int(rest[rest.index(after: colon)...]), (0...65535).contains(p) else { return nil }
                port = p
                rest = rest[..<colon]
            }
            let host = CrossSiteCheck.normalized(String(rest))
            guard !host.isEmpty, !host.contains("/"), !host.contains("@") else { return nil }
            self.host = host
            self.port = port
        }
    }

    /// `scheme://host[:port]` of an Origin header.
    struct Origin {
        let host: String
        let port: Int
        let defaultPort: Int

        init?(_ text: String) {
            let parts = text.lowercased().components(separatedBy: "://")
            guard parts.count == 2, let d = ["http": 80, "https": 443][parts[0]], let a = Authority(parts[1]) else { return nil }
            host = a.host
            defaultPort = d
            port = a.port ?? d
        }
    }
}

/// A request refused before it reaches a route: why (counted in /metrics), the status, the message.
struct HTTPRefusal: Sendable, Equatable {
    let reason: HTTPServerStatistics.Refusal
    let status: Int
    let message: String

    init(_ reason: HTTPServerStatistics.Refusal, _ status: Int, _ message: String) {
        self.reason = reason
        self.status = status
        self.message = message
    }
}
