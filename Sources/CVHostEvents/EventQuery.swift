/// What `GET /history` asks of the event store, from its query string, checked: each parameter
/// known and well formed, or a reason naming it (a 400).
///
///     source=ID  event=NAME  line=NAME  zone=NAME  label=L  track=N   equal to
///     since=UNIX until=UNIX                                           ts in [since, until)
///     before=ROW                                                      rows older than ROW (the next page)
///     limit=N                                                         at most N (1 to 1000; 100)
///
/// Newest first. A page's answer names the `before=` of the next page.
public struct EventQuery: Sendable, Equatable {
    public var source: String?
    public var event: String?
    public var line: String?
    public var zone: String?
    public var label: String?
    public var track: Int64?
    public var since: Double?
    public var until: Double?
    public var before: Int64?
    public var limit = 100

    public static let mostRows = 1000

    public struct Refusal: Error, CustomStringConvertible {
        public let description: String
    }

    public init() {}

    public init(query: [String: String]) throws(Refusal) {
        for (key, value) in query.sorted(by: { $0.key < $1.key }) {
            switch key {
            case "source": source = try Self.text(key, value)
            case "event": event = try Self.text(key, value)
            case "line": line = try Self.text(key, value)
            case "zone": zone = try Self.text(key, value)
            case "label": label = try Self.text(key, value)
            case "track": track = try Self.integer(key, value, in: 0...Int64.max)
            case "since": since = try Self.seconds(key, value)
            case "until": until = try Self.seconds(key, value)
            case "before": before = try Self.integer(key, value, in: 1...Int64.max)
            case "limit": limit = Int(try Self.integer(key, value, in: 1...Int64(Self.mostRows)))
            case "token": continue  // the live view's own (?token=), not a filter
            default:
                throw Refusal(description: "\(key.prefix(40)): no such parameter (source, event, line, zone, label, track, since, until, before, limit)")
            }
        }
        if let since, let until, until < since { throw Refusal(description: "until=\(until) is before since=\(since)") }
    }

    private static func text(_ key: String, _ value: String) throws(Refusal) -> String {
        guard !value.isEmpty, value.utf8.count <= 200 else { throw Refusal(description: "\(key)=: give a value of 1 to 200 bytes") }
        return value
    }

    private static func integer(_ key: String, _ value: String, in range: ClosedRange<Int64>) throws(Refusal) -> Int64 {
        guard let n = Int64(value), range.contains(n) else {
            throw Refusal(description: "\(key)=\(value.prefix(40)): give a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }

    private static func seconds(_ key: String, _ value: String) throws(Refusal) -> Double {
        guard let s = Double(value), s.isFinite, s >= 0, s < 1e11 else {
            throw Refusal(description: "\(key)=\(value.prefix(40)): give seconds since the Unix epoch (e.g. 1764849600)")
        }
        return s
    }
}
