import Foundation
import Glibc
import Synchronization

/// Who wrote a line: every line carries the host's name and the run's session id, so that the
/// streams of many cvhost processes (one per camera host, publishing to one broker) can be merged
/// and still be told apart; `session.started` adds cvhost's version.
public enum Producer {
    /// cvhost's version (`cvhost --version`, `cvhost_version` in `session.started`).
    public static let version = "0.3.0"

    /// The machine's host name (gethostname), as `hostname` prints it.
    public static let host: String = {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return "localhost" }
        let s = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return s.isEmpty ? "localhost" : s
    }()

    /// A random UUID (version 4) made once per process: one run of cvhost.
    public static let session = UUID().uuidString.lowercased()

    /// Lines made so far in this process: the number in each line's `event_id` (0 is kept for the line
    /// of a plugin that crashed the process, which CPluginGuard writes).
    private static let lines = Atomic<UInt64>(0)

    /// A line's `event_id`, `SESSION-N`: unique to the line among every line of every run (N counts this
    /// process's lines from 1, in the order they are made, not always the order they are written).
    /// A consumer that gets a line twice (a broker's resend) drops it by its id.
    public static func nextLineID() -> String {
        "\(session)-\(lines.add(1, ordering: .relaxed).newValue)"
    }
}
