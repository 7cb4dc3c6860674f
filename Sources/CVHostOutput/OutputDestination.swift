import CVHostCore
import Glibc

/// Where one `--output` sends the lines, as the user wrote it:
///
///     - | stdout
///     file:PATH[?max_mb=N&keep=K]
///     mqtt://[user[:password]@]host[:port][/prefix][?qos=0|1|2&queue=N&required=true]
///     mqtts://...[?ca=FILE]     (TLS; without ca=, the system's CA certificates)
///
/// Options common to queued sinks: `queue=N` lines may wait (then the oldest are dropped and
/// counted); `drain=S` seconds at the end to deliver what waits (10); `required=true` makes a
/// sink that cannot be opened or reached at start end the run (exit 5) instead of being retried
/// while the run goes on.
public enum OutputDestination: Sendable, Equatable {
    case stdout
    case file(FileSettings)
    case mqtt(MQTTSettings)

    public struct FileSettings: Sendable, Equatable {
        public var path: String
        /// Rotate when the file would grow past this many bytes (0: never).
        public var maxBytes: UInt64 = 100 * 1_048_576
        /// Rotated files kept: PATH.1 (the newest) ... PATH.keep.
        public var keep = 5
        public var queue = QueueSettings()
    }

    public struct MQTTSettings: Sendable, Equatable {
        public var tls = false
        public var host = ""
        public var port: Int32 = 1883
        public var user: String?
        public var password: String?
        /// The first topic levels, e.g. "cvhost" or "site/a/cvhost".
        public var prefix = "cvhost"
        /// QoS of every publication: 1 (at least once) by default.
        public var qos: Int32 = 1
        /// The CA certificate(s) that signed the broker's (mqtts); nil: the system's.
        public var caFile: String?
        public var queue = QueueSettings()
    }

    public struct QueueSettings: Sendable, Equatable {
        /// Lines that may wait for the sink.
        public var capacity = 100_000
        /// A sink that cannot be opened or reached at start ends the run (exit 5).
        public var required = false
        /// At the end, how long waiting lines may take to be delivered (a broker coming back).
        public var drainSeconds = 10.0
    }

    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    /// How the destination is named in messages, metrics and `output.*` lines: never a password.
    public var name: String {
        switch self {
        case .stdout: "stdout"
        case .file(let f): "file:" + f.path
        case .mqtt(let m):
            (m.tls ? "mqtts://" : "mqtt://") + (m.user.map { $0 + (m.password != nil ? ":***" : "") + "@" } ?? "")
                + (m.host.contains(":") ? "[\(m.host)]" : m.host) + ":\(m.port)/" + m.prefix
        }
    }

    /// Parses one `--output` value. A user without a password in an MQTT URL takes the password from
    /// `passwordFromEnvironment` ($CVHOST_MQTT_PASSWORD), so that it need not be on the command line.
    public init(parsing text: String, passwordFromEnvironment: String? = nil) throws(ParseError) {
        if text == "-" || text == "stdout" {
            self = .stdout
        } else if text.hasPrefix("file:") {
            self = .file(try OutputDestination.file(String(text.dropFirst(5))))
        } else if text.hasPrefix("mqtt://") || text.hasPrefix("mqtts://") {
            self = .mqtt(try OutputDestination.mqtt(text, passwordFromEnvironment: passwordFromEnvironment))
        } else {
            throw ParseError(description: "--output \(PasswordRedaction.redact(text)): write -, file:PATH or mqtt://[user[:password]@]host[:port][/prefix]")
        }
    }

    private static func file(_ text: String) throws(ParseError) -> FileSettings {
        let (path, options) = splitOptions(text)
        guard !path.isEmpty else { throw ParseError(description: "--output file: needs a path, e.g. file:/var/log/cvhost/results.jsonl") }
        var f = FileSettings(path: path)
        for (key, value) in options {
            switch key {
            case "max_mb": f.maxBytes = UInt64(try number(key, value, in: 0...1_000_000)) * 1_048_576
            case "keep": f.keep = try number(key, value, in: 1...1000)
            default: try queueOption(key, value, into: &f.queue, sink: "file", known: "max_mb, keep, queue, drain, required")
            }
        }
        return f
    }

    private static func mqtt(_ text: String, passwordFromEnvironment: String?) throws(ParseError) -> MQTTSettings {
        var m = MQTTSettings()
        m.tls = text.hasPrefix("mqtts://")
        m.port = m.tls ? 8883 : 1883
        let shown = PasswordRedaction.redact(text)
        var rest = Substring(text.drop { $0 != "/" }.dropFirst(2))
        let (location, options) = splitOptions(String(rest))
        rest = Substring(location)
        // [user[:password]@]host[:port][/prefix]. A password may hold a '/' written unescaped
        // (user:pa/ss@host): when what follows the first ':' is not a port, the credentials run to
        // the last '@', so no part of a password becomes the topic prefix.
        var authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        if !rest[..<authorityEnd].contains("@"), let colon = rest[..<authorityEnd].firstIndex(of: ":"),
           !rest[rest.index(after: colon)..<authorityEnd].allSatisfy(\.isNumber), let at = rest.lastIndex(of: "@") {
            authorityEnd = rest[at...].firstIndex(of: "/") ?? rest.endIndex
        }
        var authority = rest[..<authorityEnd]
        let path = rest[authorityEnd...].drop { $0 == "/" }
        if let at = authority.lastIndex(of: "@") {
            let credentials = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                m.user = percentDecoded(credentials[..<colon])
                m.password = percentDecoded(credentials[credentials.index(after: colon)...])
            } else {
                m.user = percentDecoded(credentials)
                m.password = passwordFromEnvironment
            }
            if m.user?.isEmpty == true { throw ParseError(description: "--output \(shown): the user before @ is empty") }
        }
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {  // [IPv6]:port
            m.host = String(authority[authority.index(after: authority.startIndex)..<close])
            authority = authority[authority.index(after: close)...]
            if !authority.isEmpty && !authority.hasPrefix(":") { throw ParseError(description: "--output \(shown): write [ADDRESS]:PORT") }
        } else {
            m.host = String(authority.prefix { $0 != ":" })
            authority = authority.drop { $0 != ":" }
        }
        if authority.hasPrefix(":") {
            guard let port = Int32(authority.dropFirst()), (1...65535).contains(port) else {
                throw ParseError(description: "--output \(shown): the port must be a number from 1 to 65535")
            }
            m.port = port
        }
        guard !m.host.isEmpty else { throw ParseError(description: "--output \(shown): name the broker's host, e.g. mqtt://broker.local/cvhost") }
        if !path.isEmpty {
            let prefix = String(path.reversed().drop { $0 == "/" }.reversed())
            if prefix.contains(where: { $0 == "+" || $0 == "#" }) || prefix.split(separator: "/", omittingEmptySubsequences: false).contains("") {
                throw ParseError(description: "--output \(shown): the topic prefix '\(prefix)' may not contain +, # or empty levels")
            }
            m.prefix = prefix
        }
        for (key, value) in options {
            switch key {
            case "qos": m.qos = Int32(try number(key, value, in: 0...2))
            case "ca":
                guard m.tls else { throw ParseError(description: "--output \(shown): ca= is for mqtts:// (TLS)") }
                m.caFile = value
            default: try queueOption(key, value, into: &m.queue, sink: "mqtt", known: "qos, ca, queue, drain, required")
            }
        }
        return m
    }

    private static func queueOption(_ key: String, _ value: String, into q: inout QueueSettings, sink: String, known: String) throws(ParseError) {
        switch key {
        case "queue": q.capacity = try number(key, value, in: 1...10_000_000)
        case "drain": q.drainSeconds = Double(try number(key, value, in: 0...3600))
        case "required":
            guard value == "true" || value == "false" else { throw ParseError(description: "--output option required=\(value): write true or false") }
            q.required = value == "true"
        default: throw ParseError(description: "--output: a \(sink) output has no option '\(key)' (it has \(known))")
        }
    }

    private static func number(_ key: String, _ value: String, in range: ClosedRange<Int>) throws(ParseError) -> Int {
        guard let n = Int(value), range.contains(n) else {
            throw ParseError(description: "--output option \(key)=\(value): write a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }

    /// "PATH?k=v&k=v" -> PATH and the options, in order.
    private static func splitOptions(_ text: String) -> (String, [(String, String)]) {
        guard let q = text.firstIndex(of: "?") else { return (text, []) }
        let options = text[text.index(after: q)...].split(separator: "&").map { pair -> (String, String) in
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(kv[0]), kv.count > 1 ? percentDecoded(kv[1]) : "")
        }
        return (String(text[..<q]), options)
    }

    /// %XX escapes decoded (a password with @ or : in it is written %40, %3A).
    static func percentDecoded<S: StringProtocol>(_ s: S) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(s.utf8)[...]
        while let b = utf8.popFirst() {
            if b == UInt8(ascii: "%"), utf8.count >= 2, let v = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(v)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(b)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
