import CVHostLines
import Foundation

/// What of the lines stdout gets (`--results-only`, `--events`, `--field NAME`): every line (the
/// default), the `result` lines alone, the results and the analytics' events (tracks, zones,
/// lines, their summary), or one field of each result's data as plain text, a line each (as
/// zbarimg's --raw: `cvhost run --plugin barcode --oneshot --field text` prints the code alone).
/// Files and brokers get every line unless their own `events=` picks some (EventSelection).
public enum StdoutSelection: Sendable, Equatable {
    case everything
    case results
    /// Results, and what the analytics say of them (`track.*`, `zone.*`, `line.*`, `analytics.summary`, `input.time_jumped`).
    case events
    /// The value of `data.NAME` in each result that has it: a string as it is (a line break in it
    /// written as \n, so that one result stays one line), any other value as JSON.
    case field(String)

    /// The line as stdout gets it, or nil when stdout gets nothing of it.
    public func select(_ line: OutputLine) -> OutputLine? {
        switch self {
        case .everything: return line
        case .results: return line.route.event == "result" ? line : nil
        case .events: return line.route.event == "result" || Self.isAnalytics(line.route.event) ? line : nil
        case .field(let name):
            guard line.route.event == "result",
                  let object = try? JSONSerialization.jsonObject(with: Data(line.bytes)) as? [String: Any],
                  let data = object["data"] as? [String: Any], let value = data[name], !(value is NSNull)
            else { return nil }
            let text: String
            if let s = value as? String {
                text = s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\r", with: "\\r")
                    .replacingOccurrences(of: "\n", with: "\\n")
            } else if let d = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys]) {
                text = String(decoding: d, as: UTF8.self)
            } else {
                return nil
            }
            return line.with(bytes: Array((text + "\n").utf8))
        }
    }

    /// The events of the analytics stage (--track, --zone, --line).
    static func isAnalytics(_ event: String) -> Bool {
        ["track.", "zone.", "line.", "analytics.", "input.time_jumped"].contains { event.hasPrefix($0) }
    }

    /// The names of a result line's data fields.
    static func dataFieldNames(_ line: OutputLine) -> [String] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.bytes)) as? [String: Any],
              let data = object["data"] as? [String: Any] else { return [] }
        return Array(data.keys)
    }
}
