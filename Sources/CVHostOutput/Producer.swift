import Glibc

/// Who wrote a line: every line carries the host's name and the run's session id, so that the
/// streams of many cvhost processes (one per camera host, publishing to one broker) can be merged
/// and still be told apart; `session.started` adds cvhost's version.
public enum Producer {
    /// cvhost's version (`cvhost --version`, `cvhost_version` in `session.started`).
    public static let version = "0.2.0"

    /// The machine's host name (gethostname), as `hostname` prints it.
    public static let host: String = {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return "localhost" }
        let s = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return s.isEmpty ? "localhost" : s
    }()

    /// A random UUID (version 4) made once per process: one run of cvhost.
    public static let session: String = {
        var rng = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
        bytes[6] = bytes[6] & 0x0F | 0x40  // version 4
        bytes[8] = bytes[8] & 0x3F | 0x80  // RFC 4122 variant
        let hex = bytes.map { b in String(b, radix: 16).count == 1 ? "0" + String(b, radix: 16) : String(b, radix: 16) }.joined()
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { r in
            String(hex[hex.index(hex.startIndex, offsetBy: r.lowerBound)..<hex.index(hex.startIndex, offsetBy: r.upperBound)])
        }
        return parts.joined(separator: "-")
    }()
}
