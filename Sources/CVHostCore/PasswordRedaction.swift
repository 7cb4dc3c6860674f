/// Passwords in URLs (an RTSP camera's, a broker's) are used, never printed: everything shown
/// (messages, events, metrics, output names) goes through `redact` first.
public enum PasswordRedaction {
    /// `text` with the password of every `scheme://user:password@` in it replaced by `***`.
    public static func redact(_ text: String) -> String {
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
