import Foundation

/// A command of the run's (`add_input`, `set_line`, `remove_input` ...), as the text a node hands
/// to `HostRun.handle`: one JSON object, its keys sorted.
enum RunCommandJSON {
    static func text(_ object: [String: Any]) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
    }
}
