import CVHostAnalytics
import Foundation

/// A site's zones, lines and tracks (`cvhost fleet set-zone|set-line|set-track`), in `cvhost-SITE`
/// in their one JSON shape (RuleCoding: as `GET /analytics` says them and `PUT /lines/NAME` takes
/// them):
///
///     zones.NAME      {"name":"bay","points":[[...]],"input":"door","dwell":30,...}    set by the node running `door`
///     lines.NAME      {"name":"gate","points":[[...],[...]],"in":"left","input":"door"}
///     tracks.PLUGIN   {"plugin":"detect","high":0.5,...}                             set by every node with the plugin
///
/// A zone or line names its input (the node that runs it sets it, and takes it away with the
/// input); a track is every node's.
enum SiteRuleKind: String, CaseIterable, Sendable {
    case zone, line, track

    var prefix: String { rawValue + "s." }
    var ruleKind: RuleKind {
        switch self {
        case .zone: .zone
        case .line: .line
        case .track: .track
        }
    }

    static func of(key: String) -> (SiteRuleKind, String)? {
        for kind in allCases where key.hasPrefix(kind.prefix) { return (kind, String(key.dropFirst(kind.prefix.count))) }
        return nil
    }
}

/// One zone, line or track of the site, checked (its JSON read as the run reads a PUT body's).
struct SiteRule: Sendable, Equatable {
    let kind: SiteRuleKind
    let name: String
    /// A zone's or line's input; nil for a track.
    let input: String?
    /// Its JSON object, as stored.
    let body: [UInt8]

    /// Reads a stored value. - Throws: a `SiteStore.Malformed` naming the key and why.
    init(_ kind: SiteRuleKind, name: String, value: [UInt8], key: String, revision: UInt64) throws(SiteStore.Malformed) {
        let rule: any AnalyticsRule
        do {
            switch kind {
            case .zone: rule = try JSONDecoder().decode(ZoneSettings.self, from: Data(value))
            case .line: rule = try JSONDecoder().decode(LineSettings.self, from: Data(value))
            case .track: rule = try JSONDecoder().decode(AnalyticsSpec.Tracked.self, from: Data(value))
            }
        } catch {
            throw SiteStore.Malformed(description: "the site's bucket key \(key) (revision \(revision)) is not a \(kind.rawValue) (\(Self.why(error))): ignored until it is written anew")
        }
        guard rule.ruleName == name else {
            throw SiteStore.Malformed(description: "the site's bucket key \(key) names \(kind.ruleKind.key) \"\(rule.ruleName)\", not \(name): ignored until it is written anew")
        }
        guard kind == .track || rule.ruleInput != nil else {
            throw SiteStore.Malformed(description: "the site's bucket key \(key): a site's \(kind.rawValue) names its input (\"input\"): ignored until it is written anew")
        }
        self.kind = kind
        self.name = name
        input = rule.ruleInput
        body = value
    }

    private static func why(_ error: Error) -> String {
        if let p = error as? AnalyticsSpec.Problem { return p.description }
        if case .dataCorrupted(let c)? = error as? DecodingError, let under = c.underlyingError as? AnalyticsSpec.Problem { return under.description }
        return "not its JSON"
    }

    /// The command that sets it on a node.
    var setCommand: String {
        var o = (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:]
        o["command"] = "set_" + kind.rawValue
        return RunCommandJSON.text(o)
    }

    /// The command that takes it away on a node.
    var removeCommand: String {
        let o: [String: Any] = ["command": "remove_" + kind.rawValue, kind.ruleKind.key: name]
        return RunCommandJSON.text(o)
    }

    /// A rule as `--zone`, `--line` or `--track` takes it, as the store keeps it.
    /// - Throws: the text's problem, one line.
    static func parse(_ kind: SiteRuleKind, _ text: String) throws(AnalyticsSpec.Problem) -> (name: String, input: String?, json: [UInt8]) {
        let rule: any AnalyticsRule
        switch kind {
        case .zone: rule = try ZoneSettings(text: text)
        case .line: rule = try LineSettings(text: text)
        case .track: rule = try AnalyticsSpec.Tracked(text: text)
        }
        return (rule.ruleName, rule.ruleInput, SiteStore.encode(rule))
    }
}
