import CVHostCore
import Glibc

/// Where one `--output` sends the lines, as the user wrote it:
///
///     - | stdout
///     file:PATH[?max_mb=N&keep=K]
///     mqtt://[user[:password]@]host[:port][/prefix][?qos=0|1|2&queue=N&required=true&counts=true&discovery=homeassistant]
///     mqtts://...[?ca=FILE]     (TLS; without ca=, the system's CA certificates)
///     kafka://[user[:password]@]broker[:port][,broker[:port]…]/TOPIC[?compression=…&tls=true&ca=FILE&sasl=…]
///     nats://[user[:password]@|token@]host[:port][/subject][?stream=NAME&token=T&tls=true&ca=FILE]
///
/// Options common to queued sinks: `queue=N` lines may wait (then the oldest are dropped and
/// counted); `drain=S` seconds at the end to deliver what waits (10); `required=true` makes a
/// sink that cannot be opened or reached at start end the run (exit 5) instead of being retried
/// while the run goes on. Brokers' too: `spool=DIR` keeps every line on disk until the broker has
/// it (`spool_mb=N`, 1024: the most it holds). Every output but stdout: `events=` the events it gets
/// (`EventSelection`; all by default).
public enum OutputDestination: Sendable, Equatable {
    case stdout
    case file(FileSettings)
    case mqtt(MQTTSettings)
    case kafka(KafkaSettings)
    case nats(NATSSettings)

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
        /// Retained topics of each input's status, lines' and zones' totals and newest snapshot (`counts=true`; `MQTTStateTopics`).
        public var counts = false
        /// Home Assistant's discovery configs under this prefix (`discovery=homeassistant`, `discovery_prefix=`); implies `counts`.
        public var discoveryPrefix: String?
        public var queue = QueueSettings()

        /// Whether the output keeps retained states (`MQTTStateTopics`).
        public var keepsStates: Bool { counts || discoveryPrefix != nil }
    }

    public struct KafkaSettings: Sendable, Equatable {
        /// host:port of the bootstrap brokers.
        public var brokers: [String] = []
        public var topic = ""
        public var user: String?
        public var password: String?
        /// SASL's mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) when a user is given.
        public var sasl: String?
        public var tls = false
        public var caFile: String?
        /// librdkafka's compression.type: none, gzip, snappy, lz4, zstd.
        public var compression = "none"
        public var queue = QueueSettings()
    }

    public struct NATSSettings: Sendable, Equatable {
        public var host = ""
        public var port: Int32 = 4222
        public var user: String?
        public var password: String?
        /// A token instead of a user (token=, or $CVHOST_NATS_TOKEN).
        public var token: String?
        /// The first tokens of every subject, e.g. "cvhost" or "site.a.cvhost".
        public var subject = "cvhost"
        /// The JetStream stream the lines go to (made, taking SUBJECT.>, when the server has none of this name).
        public var stream = "CVHOST"
        public var tls = false
        public var caFile: String?
        public var queue = QueueSettings()

        /// Tokens of letters, digits, '-' and '_' joined by '.'.
        static func isSubject(_ s: String) -> Bool {
            s.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { token in
                !token.isEmpty && token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
            }
        }
    }

    public struct SpoolSettings: Sendable, Equatable {
        public static let defaultBytes: UInt64 = 1024 * 1_048_576
        /// The folder (made if missing, the user's alone).
        public var folder: String
        /// The most the spool holds on disk.
        public var maxBytes: UInt64
    }

    public struct QueueSettings: Sendable, Equatable {
        /// Lines that may wait for the sink.
        public var capacity = 100_000
        /// A broker's lines on disk until delivered (nil: in memory only).
        public var spool: SpoolSettings?
        /// A sink that cannot be opened or reached at start ends the run (exit 5).
        public var required = false
        /// At the end, how long waiting lines may take to be delivered (a broker coming back).
        public var drainSeconds = 10.0
        /// The events the output gets (`events=`); nil: every line.
        public var events: EventSelection?
    }

    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The settings of its queue (nil for stdout, which has none).
    public var queueSettings: QueueSettings? {
        switch self {
        case .stdout: nil
        case .file(let f): f.queue
        case .mqtt(let m): m.queue
        case .kafka(let k): k.queue
        case .nats(let n): n.queue
        }
    }

    /// How the destination is named in messages, metrics and `output.*` lines: never a password.
    public var name: String {
        switch self {
        case .stdout: "stdout"
        case .file(let f): "file:" + f.path
        case .mqtt(let m):
            (m.tls ? "mqtts://" : "mqtt://") + (m.user.map { $0 + (m.password != nil ? ":***" : "") + "@" } ?? "")
                + (m.host.contains(":") ? "[\(m.host)]" : m.host) + ":\(m.port)/" + m.prefix
        case .kafka(let k):
            "kafka://" + (k.user.map { $0 + (k.password != nil ? ":***" : "") + "@" } ?? "") + k.brokers.joined(separator: ",") + "/" + k.topic
        case .nats(let n):
            "nats://" + (n.user.map { $0 + (n.password != nil ? ":***" : "") + "@" } ?? "")
                + (n.host.contains(":") ? "[\(n.host)]" : n.host) + ":\(n.port)/" + n.subject
        }
    }

    /// The environment variable a URL's password may come from instead ($CVHOST_MQTT_PASSWORD, ...).
    public static func passwordVariable(for text: String) -> String? {
        if text.hasPrefix("mqtt://") || text.hasPrefix("mqtts://") { return "CVHOST_MQTT_PASSWORD" }
        if text.hasPrefix("kafka://") { return "CVHOST_KAFKA_PASSWORD" }
        if text.hasPrefix("nats://") { return "CVHOST_NATS_PASSWORD" }
        return nil
    }

    /// Parses one `--output` value. A user without a password in a broker's URL takes the password
    /// from the environment ($CVHOST_MQTT_PASSWORD, $CVHOST_KAFKA_PASSWORD, $CVHOST_NATS_PASSWORD),
    /// and a NATS output with no user its token from $CVHOST_NATS_TOKEN, so that neither need be on
    /// the command line.
    public init(parsing text: String, environment: [String: String] = [:]) throws(ParseError) {
        let passwordFromEnvironment = OutputDestination.passwordVariable(for: text).flatMap { environment[$0] }
        if text == "-" || text == "stdout" {
            self = .stdout
        } else if text.hasPrefix("file:") {
            self = .file(try OutputDestination.file(String(text.dropFirst(5))))
        } else if text.hasPrefix("mqtt://") || text.hasPrefix("mqtts://") {
            self = .mqtt(try OutputDestination.mqtt(text, passwordFromEnvironment: passwordFromEnvironment))
        } else if text.hasPrefix("kafka://") {
            self = .kafka(try OutputDestination.kafka(text, passwordFromEnvironment: passwordFromEnvironment))
        } else if text.hasPrefix("nats://") {
            self = .nats(try OutputDestination.nats(text, passwordFromEnvironment: passwordFromEnvironment))
        } else {
            throw ParseError(description: "--output \(PasswordRedaction.redact(text)): write -, file:PATH, mqtt://[user[:password]@]host[:port][/prefix], kafka://broker[,broker]/TOPIC or nats://host[:port][/subject]")
        }
        let shown = PasswordRedaction.redact(text)
        switch self {
        case .mqtt(let m): try OutputDestination.checkSpool(m.queue, shown)
        case .kafka(let k): try OutputDestination.checkSpool(k.queue, shown)
        case .nats(var n):
            try OutputDestination.checkSpool(n.queue, shown)
            if n.user == nil && n.token == nil, let token = environment["CVHOST_NATS_TOKEN"] {
                n.token = token
                self = .nats(n)
            }
        case .stdout, .file: break
        }
    }

    private static func checkSpool(_ q: QueueSettings, _ shown: String) throws(ParseError) {
        if let s = q.spool, s.folder.isEmpty {
            throw ParseError(description: "--output \(shown): spool_mb= sizes a spool: name its folder with spool=DIR")
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
            // A file is always required: one that cannot be opened stops the run before it starts (exit 5).
            case "required", "spool", "spool_mb":
                throw ParseError(description: "--output file:\(path): \(key)= is for broker outputs (a file that cannot be opened already stops the run, exit 5)")
            default: try queueOption(key, value, into: &f.queue, sink: "file", known: "max_mb, keep, queue, drain, events")
            }
        }
        return f
    }

    /// A broker URL's parts: `SCHEME://[user[:password]@]host[:port][,host[:port]…][/path][?options]`.
    struct URLParts {
        var user: String?
        var password: String?
        var hosts: [(host: String, port: Int32)] = []
        var path = ""
        var options: [(String, String)] = []
    }

    /// Splits a broker URL. A password may hold a '/' written unescaped (user:pa/ss@host): when
    /// what follows the first ':' is not a port, the credentials run to the last '@', so no part
    /// of a password becomes the path. - Parameter shown: the URL as messages may show it.
    static func urlParts(_ text: String, defaultPort: Int32, shown: String, passwordFromEnvironment: String?) throws(ParseError) -> URLParts {
        var parts = URLParts()
        let (location, options) = splitOptions(String(text.drop { $0 != "/" }.dropFirst(2)))
        parts.options = options
        let rest = Substring(location)
        var authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        if !rest[..<authorityEnd].contains("@"), let colon = rest[..<authorityEnd].firstIndex(of: ":"),
           !rest[rest.index(after: colon)..<authorityEnd].allSatisfy(\.isNumber), let at = rest.lastIndex(of: "@") {
            authorityEnd = rest[at...].firstIndex(of: "/") ?? rest.endIndex
        }
        var authority = rest[..<authorityEnd]
        parts.path = String(rest[authorityEnd...].drop { $0 == "/" })
        if let at = authority.lastIndex(of: "@") {
            let credentials = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                parts.user = percentDecoded(credentials[..<colon])
                parts.password = percentDecoded(credentials[credentials.index(after: colon)...])
            } else {
                parts.user = percentDecoded(credentials)
                parts.password = passwordFromEnvironment
            }
            if parts.user?.isEmpty == true { throw ParseError(description: "--output \(shown): the user before @ is empty") }
        }
        for var one in authority.split(separator: ",", omittingEmptySubsequences: false) {
            var host: String
            if one.hasPrefix("["), let close = one.firstIndex(of: "]") {  // [IPv6]:port
                host = String(one[one.index(after: one.startIndex)..<close])
                one = one[one.index(after: close)...]
                if !one.isEmpty && !one.hasPrefix(":") { throw ParseError(description: "--output \(shown): write [ADDRESS]:PORT") }
            } else {
                host = String(one.prefix { $0 != ":" })
                one = one.drop { $0 != ":" }
            }
            var port = defaultPort
            if one.hasPrefix(":") {
                guard let p = Int32(one.dropFirst()), (1...65535).contains(p) else {
                    throw ParseError(description: "--output \(shown): the port must be a number from 1 to 65535")
                }
                port = p
            }
            guard !host.isEmpty else { throw ParseError(description: "--output \(shown): name the broker's host, e.g. \(text.prefix { $0 != ":" })://broker.local/…") }
            parts.hosts.append((host, port))
        }
        return parts
    }

    private static func mqtt(_ text: String, passwordFromEnvironment: String?) throws(ParseError) -> MQTTSettings {
        var m = MQTTSettings()
        m.tls = text.hasPrefix("mqtts://")
        let shown = PasswordRedaction.redact(text)
        let parts = try urlParts(text, defaultPort: m.tls ? 8883 : 1883, shown: shown, passwordFromEnvironment: passwordFromEnvironment)
        guard parts.hosts.count == 1 else { throw ParseError(description: "--output \(shown): name one broker") }
        (m.host, m.port) = parts.hosts[0]
        (m.user, m.password) = (parts.user, parts.password)
        if !parts.path.isEmpty {
            let prefix = String(parts.path.reversed().drop { $0 == "/" }.reversed())
            if prefix.contains(where: { $0 == "+" || $0 == "#" }) || prefix.split(separator: "/", omittingEmptySubsequences: false).contains("") {
                throw ParseError(description: "--output \(shown): the topic prefix '\(prefix)' may not contain +, # or empty levels")
            }
            m.prefix = prefix
        }
        var discovery = false
        var discoveryPrefix: String?
        for (key, value) in parts.options {
            switch key {
            case "qos": m.qos = Int32(try number(key, value, in: 0...2))
            case "ca":
                guard m.tls else { throw ParseError(description: "--output \(shown): ca= is for mqtts:// (TLS)") }
                m.caFile = value
            case "counts": m.counts = try flag(key, value)
            case "discovery":
                guard value == "homeassistant" else {
                    throw ParseError(description: "--output option discovery=\(value): write discovery=homeassistant (Home Assistant's MQTT discovery; its prefix is discovery_prefix=)")
                }
                discovery = true
            case "discovery_prefix":
                guard !value.isEmpty, !value.contains(where: { $0 == "+" || $0 == "#" }),
                      !value.split(separator: "/", omittingEmptySubsequences: false).contains("") else {
                    throw ParseError(description: "--output option discovery_prefix=\(value): a topic prefix without +, # or empty levels (Home Assistant's is homeassistant)")
                }
                discoveryPrefix = value
            default: try queueOption(key, value, into: &m.queue, sink: "mqtt", known: "qos, ca, counts, discovery, discovery_prefix, " + brokerQueueOptions)
            }
        }
        if discovery {
            m.discoveryPrefix = discoveryPrefix ?? "homeassistant"
        } else if discoveryPrefix != nil {
            throw ParseError(description: "--output \(shown): discovery_prefix= is for discovery=homeassistant")
        }
        return m
    }

    private static func kafka(_ text: String, passwordFromEnvironment: String?) throws(ParseError) -> KafkaSettings {
        var k = KafkaSettings()
        let shown = PasswordRedaction.redact(text)
        let parts = try urlParts(text, defaultPort: 9092, shown: shown, passwordFromEnvironment: passwordFromEnvironment)
        k.brokers = parts.hosts.map { ($0.host.contains(":") ? "[\($0.host)]" : $0.host) + ":\($0.port)" }
        (k.user, k.password) = (parts.user, parts.password)
        k.topic = parts.path
        // Kafka's legal topic names: [a-zA-Z0-9._-], 1 to 249 characters.
        guard !k.topic.isEmpty, k.topic.count <= 249, k.topic != ".", k.topic != "..",
              k.topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-") }) else {
            throw ParseError(description: "--output \(shown): name the topic after the brokers, e.g. kafka://broker:9092/cvhost-results (letters, digits, '.', '_', '-')")
        }
        for (key, value) in parts.options {
            switch key {
            case "compression":
                guard ["none", "gzip", "snappy", "lz4", "zstd"].contains(value) else {
                    throw ParseError(description: "--output option compression=\(value): write none, gzip, snappy, lz4 or zstd")
                }
                k.compression = value
            case "tls": k.tls = try flag(key, value)
            case "ca": k.caFile = value
            case "sasl":
                guard ["plain", "scram-sha-256", "scram-sha-512"].contains(value.lowercased()) else {
                    throw ParseError(description: "--output option sasl=\(value): write plain, scram-sha-256 or scram-sha-512")
                }
                k.sasl = value.uppercased()
            default: try queueOption(key, value, into: &k.queue, sink: "kafka", known: "compression, tls, ca, sasl, " + brokerQueueOptions)
            }
        }
        if k.caFile != nil && !k.tls { throw ParseError(description: "--output \(shown): ca= is for tls=true") }
        if k.user != nil && k.sasl == nil { k.sasl = "PLAIN" }
        if k.sasl != nil && k.user == nil { throw ParseError(description: "--output \(shown): sasl= needs a user: kafka://USER@broker/… (the password after USER: or in $CVHOST_KAFKA_PASSWORD)") }
        return k
    }

    private static func nats(_ text: String, passwordFromEnvironment: String?) throws(ParseError) -> NATSSettings {
        var n = NATSSettings()
        let shown = PasswordRedaction.redact(text)
        let parts = try urlParts(text, defaultPort: 4222, shown: shown, passwordFromEnvironment: passwordFromEnvironment)
        guard parts.hosts.count == 1 else { throw ParseError(description: "--output \(shown): name one server") }
        (n.host, n.port) = parts.hosts[0]
        (n.user, n.password) = (parts.user, parts.password)
        // A user with no password is a token, as the NATS clients read `nats://TOKEN@host`: never shown.
        if let user = n.user, n.password == nil {
            n.token = user
            n.user = nil
        }
        if !parts.path.isEmpty {
            let subject = String(parts.path.reversed().drop { $0 == "/" }.reversed())
            guard NATSSettings.isSubject(subject) else {
                throw ParseError(description: "--output \(shown): the subject '\(subject)' must be tokens of letters, digits, '-' and '_' joined by '.' (no wildcards)")
            }
            n.subject = subject
        }
        for (key, value) in parts.options {
            switch key {
            case "stream":
                guard !value.isEmpty, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                    throw ParseError(description: "--output option stream=\(value): a stream's name is letters, digits, '-' and '_'")
                }
                n.stream = value
            case "token": n.token = value
            case "tls": n.tls = try flag(key, value)
            case "ca": n.caFile = value
            default: try queueOption(key, value, into: &n.queue, sink: "nats", known: "stream, token, tls, ca, " + brokerQueueOptions)
            }
        }
        if n.caFile != nil && !n.tls { throw ParseError(description: "--output \(shown): ca= is for tls=true") }
        return n
    }

    private static let brokerQueueOptions = "spool, spool_mb, queue, drain, required, events"

    private static func flag(_ key: String, _ value: String) throws(ParseError) -> Bool {
        guard value == "true" || value == "false" else { throw ParseError(description: "--output option \(key)=\(value): write true or false") }
        return value == "true"
    }

    private static func queueOption(_ key: String, _ value: String, into q: inout QueueSettings, sink: String, known: String) throws(ParseError) {
        switch key {
        case "queue": q.capacity = try number(key, value, in: 1...10_000_000)
        case "drain": q.drainSeconds = Double(try number(key, value, in: 0...3600))
        case "required": q.required = try flag(key, value)
        case "events": q.events = try EventSelection(parsing: value)
        case "spool" where known.contains("spool"):
            guard !value.isEmpty else { throw ParseError(description: "--output option spool=: name a folder, e.g. spool=/var/spool/cvhost/kafka") }
            q.spool = SpoolSettings(folder: value, maxBytes: q.spool?.maxBytes ?? SpoolSettings.defaultBytes)
        case "spool_mb" where known.contains("spool"):
            let mb = UInt64(try number(key, value, in: 1...10_000_000))
            q.spool = SpoolSettings(folder: q.spool?.folder ?? "", maxBytes: mb * 1_048_576)
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
