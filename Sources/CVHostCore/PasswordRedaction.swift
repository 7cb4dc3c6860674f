/// Secrets in URLs (an RTSP camera's password, a broker's, an SRT passphrase, a pre-signed HTTP
/// URL's signature) are used, never printed: everything shown (messages, events, `source`, MQTT
/// topics, metrics labels, output names) goes through `redact` first.
///
/// A list of secret names would always miss one (`X-Amz-Credential`, `passphrase`, a vendor's own),
/// so every query value of a URL is masked; a user who wants something readable in its place names
/// the input (`--input gate=URL`), which keeps the URL out of every line.
public enum PasswordRedaction {
    /// Query parameters that carry a secret by their name, masked also outside a URL (a message
    /// that quotes `pwd=...` alone).
    static let secretParameters: Set<String> = ["password", "passwd", "pass", "pwd", "token", "access_token", "auth", "key", "apikey",
                                                "api_key", "secret", "sig", "signature", "passphrase"]

    /// `text` with, in every `scheme://...` in it, the password of its user info and every query
    /// value replaced by `***`; and elsewhere the value of every parameter named like a secret.
    public static func redact(_ text: String) -> String {
        redactNamedParameters(redactURLs(text))
    }

    /// Whether `redact` changes `url` (it holds a password or a query).
    public static func hidesSomething(_ url: String) -> Bool { redact(url) != url }

    /// Each URL in `text` runs from its scheme to the next space or quote (a password may hold
    /// `/`, `?`, `#`: people write them unescaped, so the user info runs to the URL's last `@`).
    static func redactURLs(_ text: String) -> String {
        var out = ""
        var rest = Substring(text)
        while let start = rest.range(of: "://") {
            let scheme = rest[..<start.lowerBound].reversed().prefix { $0.isLetter }
            out += rest[..<start.upperBound]
            rest = rest[start.upperBound...]
            let end = rest.firstIndex(where: { $0 == " " || $0 == "\"" || $0 == "'" || $0 == "\n" || $0 == "\t" }) ?? rest.endIndex
            out += redactURL(rest[..<end], userIsSecret: String(scheme.reversed()).lowercased() == "nats")
            rest = rest[end...]
        }
        return out + rest
    }

    /// One URL after its `://`: `user:***@host/path?name=***&name=***#fragment`. `userIsSecret`:
    /// a user without a password is itself a secret (NATS reads `nats://TOKEN@host` as a token).
    private static func redactURL(_ url: Substring, userIsSecret: Bool) -> String {
        var out = ""
        var rest = url
        // user:password@ (an '@' with no ':' before it is a user alone, or in the path or query).
        // A port and an '@' further on (host:8080/a?mail=x@y) is masked too: better too much than a secret.
        if let at = url.lastIndex(of: "@"), let colon = url[..<at].firstIndex(of: ":") {
            out += url[..<colon] + ":***@"
            rest = url[url.index(after: at)...]
        } else if userIsSecret, let at = url.lastIndex(of: "@"), !url[..<at].contains("/") {
            out += "***@"
            rest = url[url.index(after: at)...]
        }
        guard let question = rest.firstIndex(of: "?") else { return out + rest }
        out += rest[...question]
        let fragment = rest.firstIndex(of: "#") ?? rest.endIndex
        let query = rest[rest.index(after: question)..<max(fragment, rest.index(after: question))]
        out += query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            return pair[...equals] + "***"
        }.joined(separator: "&")
        return out + rest[max(fragment, rest.index(after: question))...]
    }

    /// `?name=value`, `&name=value` and `;name=value` whose name says it is a secret: the value becomes `***`.
    static func redactNamedParameters(_ text: String) -> String {
        guard text.contains("=") && (text.contains("?") || text.contains("&") || text.contains(";")) else { return text }
        var out = ""
        var rest = Substring(text)
        while let sep = rest.firstIndex(where: { $0 == "?" || $0 == "&" || $0 == ";" }) {
            out += rest[...sep]
            rest = rest[rest.index(after: sep)...]
            let nameEnd = rest.firstIndex(where: { $0 == "=" || $0 == "&" || $0 == "#" || $0 == " " || $0 == "?" }) ?? rest.endIndex
            guard nameEnd < rest.endIndex, rest[nameEnd] == "=", secretParameters.contains(rest[..<nameEnd].lowercased()) else { continue }
            out += rest[...nameEnd] + "***"
            let valueStart = rest.index(after: nameEnd)
            rest = rest[(rest[valueStart...].firstIndex(where: { $0 == "&" || $0 == "#" || $0 == " " || $0 == "\"" || $0 == "'" }) ?? rest.endIndex)...]
        }
        return out + rest
    }
}
