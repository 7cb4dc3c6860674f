/// The five kinds of rule a run's analytics has, and the fields each may have beside its name and points.
public enum RuleKind: String, CaseIterable, Sendable {
    case zone, line, track, mask, filter

    /// The options it may have (beside its name and points).
    public var options: [String] {
        switch self {
        case .zone: ["units", "anchor", "min_frames", "min_distance", "dwell", "input", "distances", "speed_unit", "labels"]
        case .line: ["in", "units", "anchor", "min_frames", "min_distance", "input", "labels"]
        case .track: ["high", "low", "min_hits", "lost", "iou", "by_label", "stationary"]
        case .mask: ["units", "anchor", "input"]
        case .filter: ["min_score", "min_area", "max_area", "min_ratio", "max_ratio", "input"]
        }
    }

    /// The field that names one (in JSON, and the route's last part: /tracks/PLUGIN, /filters/LABEL, /zones/NAME).
    public var key: String {
        switch self {
        case .track: "plugin"
        case .filter: "label"
        case .zone, .line, .mask: "name"
        }
    }

    /// Whether it is drawn: given by its points.
    public var hasPoints: Bool { self == .zone || self == .line || self == .mask }

    /// Every field a JSON object of any kind may have.
    public static let fields: Set<String> = Set(allCases.flatMap(\.options) + ["points"])
}

/// A rule's fields as given, before they are checked: read from the command line's text
/// (`--zone bay=0,0 9,0 9,9:dwell=30`, AnalyticsSpec) or from a JSON object (`{"name":"bay",
/// "points":[[0,0],[9,0],[9,9]],"dwell":30}`, RuleCoding, an HTTP body). One checker
/// (AnalyticsSpec's builders) makes the value of both, with the same reasons.
public struct RuleFields: Sendable {
    /// A value as given: text from the command line (numbers still to read), typed from JSON.
    public enum Value: Sendable, Equatable {
        case text(String), number(Double), bool(Bool), numbers([Double]), strings([String])

        /// As a reason quotes it.
        var quoted: String {
            switch self {
            case .text(let s): s
            case .number(let n): Point.text(n)
            case .bool(let b): b ? "true" : "false"
            case .numbers(let list): list.map(Point.text).joined(separator: ",")
            case .strings(let list): list.joined(separator: "+")
            }
        }
    }

    public let kind: RuleKind
    public let name: String
    /// Nil: none given.
    public var points: [Point]?
    public var options: [(key: String, value: Value)]
    /// How a reason names it: `--zone bay` (text) or `zone bay` (JSON).
    let what: String
    /// The whole as given, for a reason about one value: the flag's text, or `zone bay`.
    let given: String

    /// Fields of a JSON object (or a command's body): its name, points, and options; a field of
    /// another kind is refused, naming what this kind has.
    public init(_ kind: RuleKind, name: String, points: [Point]?, options: [(key: String, value: Value)]) throws(AnalyticsSpec.Problem) {
        let what = "\(kind.rawValue) \(name)"
        if let stray = options.map(\.key).first(where: { !kind.options.contains($0) }) ?? (!kind.hasPoints && points != nil ? "points" : nil) {
            throw AnalyticsSpec.Problem("a \(kind.rawValue) has no \"\(stray)\" (it has \(((kind.hasPoints ? ["points"] : []) + kind.options).joined(separator: ", ")))")
        }
        if kind.hasPoints && points == nil {
            throw AnalyticsSpec.Problem("\(what): give \"points\": [[x,y],[x,y]\(kind == .line ? "" : ",[x,y],...")] in the frame's pixels (or fractions of it)")
        }
        self.init(kind, name: name, points: points, options: options, what: what, given: what)
    }

    init(_ kind: RuleKind, name: String, points: [Point]?, options: [(key: String, value: Value)], what: String, given: String) {
        self.kind = kind
        self.name = name
        self.points = points
        self.options = options
        self.what = what
        self.given = given
    }

    func value(_ key: String) -> Value? { options.last { $0.key == key }?.value }
}

/// A zone, line, mask, filter or track: read from the command line's text or one JSON shape
/// (RuleCoding: GET /analytics, session.started, the state file, an HTTP body), by one checker.
public protocol AnalyticsRule: Codable, Sendable, Equatable {
    static var kind: RuleKind { get }
    /// Its name: a zone's, line's or mask's; a track's plugin; a filter's label.
    var ruleName: String { get }
    /// The input it is for; nil: every input.
    var ruleInput: String? { get }
    /// As the command line gives it (`--zone` takes `text`).
    init(text: String) throws(AnalyticsSpec.Problem)
    /// From fields read elsewhere (a JSON object).
    init(fields: RuleFields) throws(AnalyticsSpec.Problem)
}
