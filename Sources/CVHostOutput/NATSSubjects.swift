import CVHostLines
/// The NATS subject layout, a contract with consumers (docs/outputs.md, "Outputs and fleets"):
///
///     SUBJECT.HOST.SOURCE.PLUGIN.EVENT    every line; the payload is the line itself
///
/// e.g. `cvhost.gate-1.cam0.barcode.result`, `cvhost.gate-1.cam0._.session.started`,
/// `cvhost.gate-1.cam0.face.track.started`: the event keeps its dots (its own tokens), so
/// `cvhost.*.cam0.>` is one camera's every line and `cvhost.*.*.*.result` every result. A token
/// with no value is `_`; characters NATS reserves in a token (`.`, `*`, `>`, white space) and
/// control characters become `_`, so a host `gate-1.example` is `gate-1_example`; a token is at
/// most 200 bytes (`ProtocolNamePart`).
struct NATSSubjects {
    let prefix: String
    let host: String
    private var subjects = RouteNames()

    init(prefix: String, host: String) {
        self.prefix = prefix
        self.host = NATSSubjects.token(host)
    }

    /// What the stream takes: every subject of this layout.
    var wildcard: String { prefix + ".>" }

    /// The subject of a line (made once per route).
    mutating func subject(for route: OutputLine.Route) -> String {
        subjects.name(for: route) { [prefix, host] r in
            let event = r.event.split(separator: ".", omittingEmptySubsequences: false).map { NATSSubjects.token(String($0)) }
            return ([prefix, host, NATSSubjects.token(r.source), NATSSubjects.token(r.plugin)] + event).joined(separator: ".")
        }
    }

    /// One token: never empty, never a wildcard or a separator.
    static func token(_ value: String?) -> String {
        ProtocolNamePart.make(value) { $0 == "." || $0 == "*" || $0 == ">" || $0.properties.isWhitespace }
    }
}
