import Glibc
import Synchronization

/// Human-readable messages on stderr, one line each: `cvhost: warning: ...`.
/// stdout carries only JSON Lines; everything meant for people goes here.
public enum Log {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug = 0, info, warning, error

        public var name: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            }
        }

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    private static let threshold = Atomic<Int>(Level.info.rawValue)

    /// Messages below this level are not written.
    public static var level: Level {
        get { Level(rawValue: threshold.load(ordering: .relaxed)) ?? .info }
        set { threshold.store(newValue.rawValue, ordering: .relaxed) }
    }

    public static func write(_ level: Level, _ message: String, source: String? = nil) {
        guard level >= self.level else { return }
        // Newlines inside a message would look like separate log lines: fold them.
        let text = message.replacingNewlines()
        let line = "cvhost: \(source.map { "[\($0)] " } ?? "")\(level == .info ? "" : level.name + ": ")\(text)\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(STDERR_FILENO, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                offset += n
            }
        }
    }

    public static func debug(_ m: String, source: String? = nil) { write(.debug, m, source: source) }
    public static func info(_ m: String, source: String? = nil) { write(.info, m, source: source) }
    public static func warning(_ m: String, source: String? = nil) { write(.warning, m, source: source) }
    public static func error(_ m: String, source: String? = nil) { write(.error, m, source: source) }
}

extension String {
    func replacingNewlines() -> String {
        guard contains(where: { $0 == "\n" || $0 == "\r" }) else { return self }
        return String(map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}
