import CVHostCore
import CVHostHTTP
import Foundation

/// The live view and control server of a run (`--http` and the options that go with it), checked.
public struct LiveViewSettings: Sendable, Equatable {
    public let host: String
    public let port: Int
    /// From --http-token-file, else $CVHOST_HTTP_TOKEN; nil when neither gives one.
    public let token: String?
    public let allowHosts: [String]
    public let previewFPS: Double
    public let previewWidth: Int
    /// Seconds to go on serving once every input has ended by itself; nil: until stopped.
    public let linger: Double?
    /// What inputs added over HTTP may name (`--allow-inputs`).
    public let allowInputs: InputPolicy
    /// The address other machines reach the server at (`--http-public-url`, without a trailing
    /// '/'): every `snapshot_url`, clip `url` and `session.started`'s `http` start with it; nil:
    /// the address the server listens on.
    public let publicURL: String?
    /// Its host: requests that come by the public address name it, and are answered.
    let publicHost: String?

    /// The names the server answers to besides its own and IP addresses.
    public var answeredHosts: [String] { allowHosts + (publicHost.map { allowHosts.contains($0) ? [] : [$0] } ?? []) }

    /// nil when `http` is nil (no live view). - Throws: UsageError naming the option at fault.
    public init?(http: String?, tokenFile: String? = nil, allowHosts: [String] = [], previewFPS: Double = 5,
                 previewWidth: Int = 640, linger: Double? = nil, allowInputs: String? = nil, publicURL: String? = nil,
                 environment: [String: String] = ProcessInfo.processInfo.environment) throws(UsageError) {
        guard let http else {
            if tokenFile != nil || linger != nil || !allowHosts.isEmpty || allowInputs != nil || publicURL != nil {
                throw UsageError("--http-token-file, --http-allow-host, --http-linger, --http-public-url and --allow-inputs go with --http")
            }
            return nil
        }
        (host, port) = try Self.listenAddress(http)
        token = try Self.token(file: tokenFile, environment: environment)
        if let refusal = HTTPServer.Settings(host: host, port: port, token: token).refusal { throw UsageError(refusal) }
        if let bad = allowHosts.first(where: { $0.isEmpty || $0.contains(where: { " /:@,".contains($0) }) && !$0.hasPrefix("[") }) {
            throw UsageError("--http-allow-host '\(bad)': give a host name (cam.example), without a scheme, port or path")
        }
        if !(previewFPS > 0 && previewFPS <= 60) { throw UsageError("--preview-fps must be more than 0 and at most 60") }
        if previewWidth < 16 || previewWidth > 7680 { throw UsageError("--preview-width must be from 16 to 7680") }
        if let linger, linger < 0 || linger > RunSettings.maxSeconds || !linger.isFinite {
            throw UsageError("--http-linger must be 0 or more seconds, and at most 1e9")
        }
        if let publicURL {
            let (url, host) = try Self.parsePublicURL(publicURL)
            self.publicURL = url
            publicHost = host
        } else {
            self.publicURL = nil
            publicHost = nil
        }
        self.allowHosts = allowHosts
        self.previewFPS = previewFPS
        self.previewWidth = previewWidth
        self.linger = linger
        self.allowInputs = try allowInputs.map { text throws(UsageError) in try InputPolicy(parsing: text) } ?? .standard
    }

    /// `--http-public-url`: http(s)://HOST[:PORT][/PATH], no user, query or fragment. - Returns: it
    /// without a trailing '/', and its host (lowercased, IPv6 without brackets).
    static func parsePublicURL(_ text: String) throws(UsageError) -> (String, String) {
        let usage = "--http-public-url: give the address other machines open, e.g. http://cam-host.lan:8080 or https://example.org/cvhost "
            + "(http or https, a host, an optional port and path; no user, password, query or fragment)"
        guard let c = URLComponents(string: text), let scheme = c.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = c.host, !host.isEmpty, c.user == nil, c.password == nil, c.query == nil, c.fragment == nil else {
            throw UsageError(usage)
        }
        var url = text
        while url.hasSuffix("/") { url.removeLast() }
        return (url, host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]")))
    }

    /// ADDR:PORT as given (IPv6 in brackets), the address defaulting to loopback.
    static func listenAddress(_ http: String) throws(UsageError) -> (host: String, port: Int) {
        var host = "127.0.0.1"
        var portText = http
        if let colon = http.lastIndex(of: ":") {
            host = String(http[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            portText = String(http[http.index(after: colon)...])
        }
        guard let port = Int(portText), (0...65535).contains(port), !host.isEmpty else {
            throw UsageError("--http \(http): give a port (8080) or an address and a port (0.0.0.0:8080, [::1]:8080)")
        }
        return (host, port)
    }

    static func token(file: String?, environment: [String: String]) throws(UsageError) -> String? {
        if let file {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw UsageError("--http-token-file \(file): cannot read it")
            }
            let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !token.isEmpty else { throw UsageError("--http-token-file \(file) is empty") }
            return token
        }
        if let env = environment["CVHOST_HTTP_TOKEN"], !env.isEmpty { return env }
        return nil
    }
}
