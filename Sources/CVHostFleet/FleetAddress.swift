import CVHostCore
import Foundation

/// Where a fleet's site is: `nats://[USER:PASSWORD@|TOKEN@]HOST[:PORT][,HOST[:PORT]...]/SITE`, the
/// NATS servers of one JetStream cluster (any of them will do; the client learns the others) and the
/// site's name. Several sites may share a cluster: each has buckets of its own (`SiteStore`).
public struct FleetAddress: Sendable, Equatable {
    /// `nats://HOST:PORT` each, without credentials.
    public let servers: [String]
    public let site: String
    public let user: String?
    public let password: String?
    public let token: String?

    /// A refusal naming the setting and what to write.
    public struct Problem: Error, CustomStringConvertible {
        public let description: String
    }

    /// The site's name: letters, digits, `_` and `-`, as JetStream's bucket names take them.
    public static func isSiteName(_ s: String) -> Bool {
        (1...32).contains(s.utf8.count) && s.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c == 0x2D
        }
    }

    /// A node's name: letters, digits, `_` and `-` (a key in the nodes' bucket).
    public static func isNodeName(_ s: String) -> Bool {
        (1...64).contains(s.utf8.count) && s.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c == 0x2D
        }
    }

    /// - Parameter setting: the option's name for a refusal (`--fleet`).
    public init(parsing text: String, setting: String = "--fleet") throws(Problem) {
        let shape = "\(setting) is nats://HOST[:PORT][,HOST[:PORT]...]/SITE, e.g. nats://n1.local,n2.local,n3.local/depot"
        guard text.hasPrefix("nats://") else { throw Problem(description: "\(setting) \(PasswordRedaction.redact(text)): \(shape)") }
        var rest = Substring(text.dropFirst("nats://".count))
        guard let slash = rest.lastIndex(of: "/") else { throw Problem(description: "\(setting) \(PasswordRedaction.redact(text)) names no site: \(shape)") }
        let site = String(rest[rest.index(after: slash)...])
        rest = rest[..<slash]
        guard Self.isSiteName(site) else {
            throw Problem(description: "\(setting): the site's name '\(site)' is 1 to 32 letters, digits, _ or -")
        }
        var user: String?, password: String?, token: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                user = String(credentials[..<colon]).removingPercentEncodingOrSelf
                password = String(credentials[credentials.index(after: colon)...]).removingPercentEncodingOrSelf
            } else {
                token = String(credentials).removingPercentEncodingOrSelf
            }
        }
        var servers: [String] = []
        for part in rest.split(separator: ",", omittingEmptySubsequences: false) {
            var host = Substring(part), port = "4222"
            if host.hasPrefix("[") {
                guard let close = host.firstIndex(of: "]") else { throw Problem(description: "\(setting): '\(part)' is not a server: \(shape)") }
                let after = host[host.index(after: close)...]
                if after.hasPrefix(":") { port = String(after.dropFirst()) } else if !after.isEmpty { throw Problem(description: "\(setting): '\(part)' is not a server: \(shape)") }
                host = host[...close]
            } else if let colon = host.lastIndex(of: ":") {
                port = String(host[host.index(after: colon)...])
                host = host[..<colon]
            }
            guard !host.isEmpty, let p = Int(port), (1...65535).contains(p) else {
                throw Problem(description: "\(setting): '\(part)' is not a server (HOST or HOST:PORT, port 1-65535): \(shape)")
            }
            servers.append("nats://\(host):\(p)")
        }
        self.servers = servers
        self.site = site
        self.user = user
        self.password = password
        self.token = token
    }

    /// As it may be shown: the servers and the site, never a password or token.
    public var shown: String {
        "nats://" + (user.map { $0 + ":***@" } ?? (token != nil ? "***@" : "")) + servers.map { String($0.dropFirst("nats://".count)) }.joined(separator: ",") + "/" + site
    }
}

private extension String {
    var removingPercentEncodingOrSelf: String { removingPercentEncoding ?? self }
}

extension FleetAddress {
    /// A node's default name, the host's: its first label, with what a node's name cannot hold as `-`.
    public static func nodeName(host: String) -> String {
        let first = host.split(separator: ".").first.map(String.init) ?? host
        let cleaned = String(first.unicodeScalars.prefix(64).map { isNodeName(String($0)) ? Character($0) : "-" })
        return cleaned.isEmpty ? "node" : cleaned
    }
}
