import CVHostLines
import Glibc

/// Which lines one output gets, by their `event` (`events=` on any output but stdout, whose
/// `--events`, `--results-only` and `--field` came first): names or shell globs joined by `+`,
///
///     mqtt://broker?events=line.crossed+zone.*+clip.saved+analytics.summary
///
/// so that a broker can be spared the per-frame `result` and `metrics` lines. Every pattern must
/// match some event of the vocabulary (`EventNames`): a name mistyped is refused, not a silent output.
public struct EventSelection: Sendable, Equatable {
    /// The patterns as written, in order.
    public let patterns: [String]

    public init(parsing text: String) throws(OutputDestination.ParseError) {
        let patterns = text.split(separator: "+", omittingEmptySubsequences: false).map(String.init)
        for p in patterns {
            guard !p.isEmpty, p.utf8.count <= 64,
                  p.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || "._-*?".contains($0)) }) else {
                throw OutputDestination.ParseError(description: "--output option events=\(text): name events or patterns joined by '+', "
                                                   + "e.g. events=line.crossed+zone.*+clip.saved (lowercase letters, digits, '.', '_', '-', '*', '?')")
            }
            guard EventNames.all.contains(where: { Self.matches(p, $0) }) else {
                throw OutputDestination.ParseError(description: "--output option events=: '\(p)' is no event cvhost writes "
                                                   + "(the events: \(EventNames.all.joined(separator: ", ")))")
            }
        }
        self.patterns = patterns
    }

    /// Whether a line of this event goes to the output.
    public func admits(_ event: String) -> Bool {
        patterns.contains { Self.matches($0, event) }
    }

    /// `*` any run of characters, `?` one (fnmatch(3) without flags: no character is special but these).
    static func matches(_ pattern: String, _ event: String) -> Bool {
        fnmatch(pattern, event, 0) == 0
    }
}
