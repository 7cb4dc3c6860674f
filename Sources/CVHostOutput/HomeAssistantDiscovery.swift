import CVHostLines

/// Home Assistant's MQTT discovery (`discovery=homeassistant` on an MQTT output): a retained config
/// per entity at `DISCOVERY_PREFIX/COMPONENT/cvhost_HOST/OBJECT/config`, which Home Assistant reads
/// to make the entity with no YAML; an empty retained config removes it (Home Assistant's "MQTT
/// Discovery"). Every state is one of `MQTTStateTopics`' retained topics. What appears:
///
/// - a device per cvhost host, with a `connectivity` binary sensor (PREFIX/HOST/status);
/// - a device per input (via the host's), with a `connectivity` binary sensor (its status topic);
///   per line counted there, two sensors (`in`, `out`; total_increasing; the counts per label as
///   attributes); per zone an occupancy sensor and an `occupancy` binary sensor; with `--http`, an
///   image entity showing its newest snapshot (its URL's topic).
///
/// Every entity is available while cvhost is (the host's status topic, "online"/"offline", which
/// the broker says for cvhost when it dies: the connection's last will).
public struct HomeAssistantDiscovery: Sendable, Equatable {
    /// Home Assistant's discovery prefix (its `discovery_prefix`: `homeassistant` unless changed there).
    public let prefix: String
    private let host: String
    private let hostStatus: String

    init(prefix: String, host: String, hostStatus: String) {
        self.prefix = prefix
        self.host = host
        self.hostStatus = hostStatus
    }

    typealias Publication = (topic: String, payload: [UInt8])

    private var node: String { Self.id("cvhost_" + host) }

    /// The host's device and its connectivity sensor (its state is the availability of the rest).
    func host(statusTopic: String) -> [Publication] {
        [config("binary_sensor", "status", name: "cvhost", device: hostDevice, available: false) { o in
            o.set("state_topic", statusTopic)
            o.set("payload_on", "online")
            o.set("payload_off", "offline")
            o.set("device_class", "connectivity")
            o.set("entity_category", "diagnostic")
        }]
    }

    func input(_ source: String, statusTopic: String) -> [Publication] {
        [config("binary_sensor", source + "_status", name: "online", device: device(source)) { o in
            o.set("state_topic", statusTopic)
            o.set("payload_on", "online")
            o.set("payload_off", "offline")
            o.set("device_class", "connectivity")
        }]
    }

    func inputRemoved(_ source: String) -> [Publication] {
        [removal("binary_sensor", source + "_status")]
    }

    /// An input's motion as cvhost sees it (--motion): a motion binary sensor.
    func motion(_ source: String, stateTopic: String) -> [Publication] {
        [config("binary_sensor", source + "_motion", name: "motion", device: device(source)) { o in
            o.set("state_topic", stateTopic)
            o.set("payload_on", "ON")
            o.set("payload_off", "OFF")
            o.set("device_class", "motion")
        }]
    }

    func motionRemoved(_ source: String) -> [Publication] {
        [removal("binary_sensor", source + "_motion")]
    }

    func line(_ source: String, _ key: MQTTStateTopics.Counted, stateTopic: String) -> [Publication] {
        ["in", "out"].map { direction in
            config("sensor", "\(source)_\(key.plugin)_line_\(key.name)_\(direction)", name: "\(key.name) \(direction) (\(key.plugin))",
                   device: device(source)) { o in
                o.set("state_topic", stateTopic)
                o.set("value_template", "{{ value_json.\(direction) }}")
                o.set("json_attributes_topic", stateTopic)
                o.set("json_attributes_template", "{{ value_json.labels | tojson }}")
                o.set("state_class", "total_increasing")
                o.set("icon", direction == "in" ? "mdi:arrow-right-bold" : "mdi:arrow-left-bold")
            }
        }
    }

    func lineRemoved(_ source: String, _ key: MQTTStateTopics.Counted) -> [Publication] {
        ["in", "out"].map { removal("sensor", "\(source)_\(key.plugin)_line_\(key.name)_\($0)") }
    }

    func zone(_ source: String, _ key: MQTTStateTopics.Counted, stateTopic: String) -> [Publication] {
        let object = "\(source)_\(key.plugin)_zone_\(key.name)"
        return [
            config("sensor", object + "_occupancy", name: "\(key.name) occupancy (\(key.plugin))", device: device(source)) { o in
                o.set("state_topic", stateTopic)
                o.set("value_template", "{{ value_json.occupancy }}")
                o.set("json_attributes_topic", stateTopic)
                o.set("json_attributes_template", "{{ value_json.labels | tojson }}")
                o.set("state_class", "measurement")
                o.set("icon", "mdi:account-group")
            },
            config("binary_sensor", object + "_occupied", name: "\(key.name) occupied (\(key.plugin))", device: device(source)) { o in
                o.set("state_topic", stateTopic)
                o.set("value_template", "{{ 'ON' if value_json.occupancy > 0 else 'OFF' }}")
                o.set("device_class", "occupancy")
            },
        ]
    }

    func zoneRemoved(_ source: String, _ key: MQTTStateTopics.Counted) -> [Publication] {
        let object = "\(source)_\(key.plugin)_zone_\(key.name)"
        return [removal("sensor", object + "_occupancy"), removal("binary_sensor", object + "_occupied")]
    }

    func snapshot(_ source: String, urlTopic: String) -> [Publication] {
        [config("image", source + "_snapshot", name: "snapshot", device: device(source)) { o in
            o.set("url_topic", urlTopic)
        }]
    }

    func snapshotRemoved(_ source: String) -> [Publication] {
        [removal("image", source + "_snapshot")]
    }

    // MARK: - The configs

    private var hostDevice: JSONObject {
        var d = JSONObject()
        d.set("identifiers", strings: [node])
        d.set("name", "cvhost on \(host)")
        d.set("manufacturer", "cvhost")
        d.set("model", "cvhost")
        d.set("sw_version", Producer.version)
        return d
    }

    private func device(_ source: String) -> JSONObject {
        var d = JSONObject()
        d.set("identifiers", strings: [Self.id("cvhost_\(host)_\(source)")])
        d.set("name", source)
        d.set("manufacturer", "cvhost")
        d.set("model", "input")
        d.set("via_device", node)
        return d
    }

    private func topic(_ component: String, _ object: String) -> String {
        "\(prefix)/\(component)/\(node)/\(Self.id(object))/config"
    }

    private func config(_ component: String, _ object: String, name: String, device: JSONObject, available: Bool = true,
                        _ fill: (inout JSONObject) -> Void) -> Publication {
        var o = JSONObject()
        o.set("name", name)
        o.set("unique_id", node + "_" + Self.id(object))
        fill(&o)
        if available {
            o.set("availability_topic", hostStatus)
            o.set("payload_available", "online")
            o.set("payload_not_available", "offline")
        }
        o.set("device", object: device)
        var origin = JSONObject()
        origin.set("name", "cvhost")
        origin.set("sw_version", Producer.version)
        o.set("origin", object: origin)
        return (topic(component, object), o.finished())
    }

    private func removal(_ component: String, _ object: String) -> Publication {
        (topic(component, object), [])
    }

    /// A topic level and id Home Assistant takes: letters, digits, '_' and '-'. A name that had to be
    /// changed (or cut) gets a hash of itself, so that two names never become one id.
    static func id(_ raw: String) -> String {
        let kept = String(raw.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") ? $0 : "_" })
        guard kept != raw || kept.utf8.count > 96 else { return kept }
        var hash: UInt32 = 2_166_136_261  // FNV-1a
        for b in raw.utf8 { hash = (hash ^ UInt32(b)) &* 16_777_619 }
        let hex = String(hash, radix: 16)
        return String(kept.prefix(80)) + "_" + String(repeating: "0", count: 8 - hex.count) + hex
    }
}
