/// Passwords in URLs (an RTSP camera's, a broker's) are used, never printed: everything shown
/// (messages, events, metrics, output names) goes through `redact` first.
public enum PasswordRedaction {
    /// Query parameters that carry a secret by their name (cameras put credentials there too:
    /// `?user=admin&pwd=...`, `?token=...`).
    static let secretParameters: Set<String> = ["password", "passwd", "pass", "pwd", "token", "access_token", "auth", "key", "apikey",
                                                "api_key", "secret", "sig", "signature"]

    /// `text` with the password of every `scheme://user:password@` in it, and the value of every
    /// query parameter named like a secret (`pwd=`, `token=`...), replaced by `***`.
    public static func redact(_ text: String) -> String {
        redactQuery(redactAuthority(text))
    }

    /// `?name=value` and `&name=value` whose name says it is a secret: the value becomes `***`.
    static func redactQuery(_ text: String) -> String {
        guard text.contains("=") && (text.contains("?") || text.contains("&")) else { return text }
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

    /// `text` with the password of every `scheme://user:password@` in it replaced by `***`.
    static func redactAuthority(_ text: String) -> String {
        var out = ""
        var rest = Substring(text)
        while let start = rest.range(of: "://") {
            out += rest[..<start.upperBound]
            rest = rest[start.upperBound...]
            // The authority ends at the first '/', '?' or '#'; credentials end at its last '@'.
            let authorityEnd = rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                out += authority[..<colon] + ":***" + authority[at...]
                rest = rest[authorityEnd...]
            }
        }
        return out + rest
    }
}
