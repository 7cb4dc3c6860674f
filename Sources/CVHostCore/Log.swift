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
        // Newlines inside a message would look like separate log lines: fold them. Other control
        // characters (a terminal's escapes) come from text cvhost did not write (a file's name,
        // a model's class names, a library's message): shown, not obeyed.
        let text = message.printable()
        let line = "cvhost: \(source.map { "[\($0)] " } ?? "")\(level == .info ? "" : level.name + ": ")\(text)\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { raw in
            var offset = 0
            while offset < raw.count {
                let (n, _) = SystemCall.retrying { Glibc.write(STDERR_FILENO, raw.baseAddress! + offset, raw.count - offset) }
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
    /// One line a terminal shows as it is: newlines as spaces, tabs kept, every other control
    /// character (C0, DEL, C1) written as `\xNN`. Scalar by scalar: a control character followed by
    /// a combining mark is still one.
    func printable() -> String {
        guard unicodeScalars.contains(where: \.isControlCharacter) else { return self }
        var out = String.UnicodeScalarView()
        for s in unicodeScalars {
            switch s.value {
            case 0x0A, 0x0D: out.append(" ")
            case 0x09: out.append(s)
            case 0..<0x20, 0x7F...0x9F: out.append(contentsOf: Unicode.Scalar.escaped(UInt8(s.value)).unicodeScalars)
            default: out.append(s)
            }
        }
        return String(out)
    }
}
