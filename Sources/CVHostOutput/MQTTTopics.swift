import CVHostLines
/// The MQTT topic layout, a contract with subscribers (docs/outputs.md, "Outputs and fleets"):
///
///     PREFIX/HOST/SOURCE/PLUGIN/EVENT    every line; the payload is the line itself
///     PREFIX/HOST/status                 "online" (retained) while cvhost runs; "offline" (retained,
///                                        and the connection's last will) when it stops or dies
///
/// e.g. `cvhost/gate-1/cam0/barcode/result`, `cvhost/gate-1/cam0/barcode/metrics`,
/// `cvhost/gate-1/cam0/_/session.started`. A level with no value (the plugin of a session event,
/// the source of a camera plugged in) is `_`; characters MQTT reserves in a level (`/`, `+`, `#`)
/// and control characters become `_`, so an input read from `clips/a.mp4` is `clips_a.mp4` (name
/// inputs with NAME=); a level is at most 200 bytes (`ProtocolNamePart`).
struct MQTTTopics {
    let prefix: String
    let host: String
    private var topics = RouteNames()

    init(prefix: String, host: String) {
        self.prefix = prefix
        self.host = MQTTTopics.level(host)
    }

    var status: String { "\(prefix)/\(host)/status" }

    /// The topic of a line (made once per route).
    mutating func topic(for route: OutputLine.Route) -> String {
        topics.name(for: route) { [prefix, host] r in
            [prefix, host, MQTTTopics.level(r.source), MQTTTopics.level(r.plugin), MQTTTopics.level(r.event)].joined(separator: "/")
        }
    }

    /// One topic level: never empty, never a wildcard or a separator.
    static func level(_ value: String?) -> String {
        ProtocolNamePart.make(value) { $0 == "/" || $0 == "+" || $0 == "#" }
    }
}
