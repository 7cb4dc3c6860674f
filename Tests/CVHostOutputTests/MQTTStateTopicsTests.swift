import CVHostLines
import Foundation
import Testing
@testable import CVHostOutput

/// The retained topics an MQTT output keeps (`counts=true`, `discovery=homeassistant`), from lines
/// written by hand as the run writes them.
@Suite("MQTT's retained states and Home Assistant's discovery")
struct MQTTStateTopicsTests {
    static func started(_ source: String, plugin: String = "walker", lines: [String], zones: [String]) -> OutputLine {
        var e = JSONObject.envelope(event: "session.started", source: source, tsNs: 0)
        var analytics = JSONObject()
        analytics.set("zones", array: zones.map { n in
            var z = JSONObject()
            z.set("name", n)
            return z
        })
        analytics.set("lines", array: lines.map { n in
            var l = JSONObject()
            l.set("name", n)
            return l
        })
        var p = JSONObject()
        p.set("plugin", plugin)
        p.set("analytics", object: analytics)
        var other = JSONObject()
        other.set("plugin", "barcode")
        e.set("plugins", array: [p, other])
        return e.line()
    }

    static func event(_ event: String, _ source: String?, plugin: String? = "walker", _ fill: (inout JSONObject) -> Void) -> OutputLine {
        var e = JSONObject.envelope(event: event, source: source, plugin: plugin, tsNs: 0)
        var d = JSONObject()
        fill(&d)
        e.set("data", object: d)
        return e.line()
    }

    static func crossed(_ source: String, line: String, label: String, _ inward: Int, _ outward: Int, total: (Int, Int)) -> OutputLine {
        event("line.crossed", source) { d in
            d.set("line", line)
            d.set("label", label)
            d.set("in", inward)
            d.set("out", outward)
            d.set("total_in", total.0)
            d.set("total_out", total.1)
        }
    }

    static func occupancy(_ source: String, zone: String, label: String, _ count: Int) -> OutputLine {
        event("zone.occupancy", source) { d in
            d.set("zone", zone)
            d.set("label", label)
            d.set("count", count)
            d.set("total", count)
        }
    }

    /// (topic, payload as text) of each publication.
    static func shown(_ lines: [OutputLine]) -> [(topic: String, payload: String)] {
        lines.map { l in
            #expect(l.route.event == MQTTStateTopics.retainedEvent)
            return (l.route.source ?? "", String(decoding: l.bytes.dropLast(), as: UTF8.self))
        }
    }

    static func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    @Test("counts=true: an input's status, its lines and zones at 0 when it starts, the totals after each crossing and the occupancy; nothing for other lines")
    func counts() {
        let s = MQTTStateTopics(prefix: "cvhost", host: "gate-1", discoveryPrefix: nil)
        #expect(s.opening().isEmpty)
        let start = Self.shown(s.publications(after: Self.started("door", lines: ["entrance"], zones: ["desk"])))
        #expect(start.map(\.topic) == ["cvhost/gate-1/door/status", "cvhost/gate-1/door/walker/lines/entrance", "cvhost/gate-1/door/walker/zones/desk"])
        #expect(start[0].payload == "online")
        #expect(start[1].payload == #"{"line":"entrance","in":0,"out":0,"labels":{}}"#)
        #expect(start[2].payload == #"{"zone":"desk","occupancy":0,"labels":{}}"#)
        _ = s.publications(after: Self.crossed("door", line: "entrance", label: "person", 1, 0, total: (1, 0)))
        let second = Self.shown(s.publications(after: Self.crossed("door", line: "entrance", label: "car", 0, 1, total: (1, 1))))
        #expect(second.count == 1 && second[0].topic == "cvhost/gate-1/door/walker/lines/entrance")
        #expect(second[0].payload == #"{"line":"entrance","in":1,"out":1,"labels":{"car":{"in":0,"out":1},"person":{"in":1,"out":0}}}"#)
        // The same line twice (a resend) changes nothing.
        let again = Self.shown(s.publications(after: Self.crossed("door", line: "entrance", label: "car", 0, 1, total: (1, 1))))
        #expect(again.map(\.payload) == second.map(\.payload))
        _ = s.publications(after: Self.occupancy("door", zone: "desk", label: "person", 2))
        let occupied = Self.shown(s.publications(after: Self.occupancy("door", zone: "desk", label: "car", 1)))
        #expect(occupied.map(\.payload) == [#"{"zone":"desk","occupancy":3,"labels":{"car":1,"person":2}}"#])
        // A result, a metrics line: nothing.
        #expect(s.publications(after: Self.event("result", "door") { $0.set("label", "person") }).isEmpty)
        #expect(s.publications(after: Self.event("metrics", "door") { $0.set("frames", 1) }).isEmpty)
        // Interrupted, back, ended.
        let statuses = ["session.interrupted", "session.interruption_ended", "session.stopped"].flatMap { event in
            Self.shown(s.publications(after: Self.event(event, "door", plugin: nil) { _ in }))
        }
        #expect(statuses.map(\.payload) == ["offline", "online", "offline"] && Set(statuses.map(\.topic)) == ["cvhost/gate-1/door/status"])
        // All of it, for a connection that comes back: the newest value of each topic.
        let all = Self.shown(s.all())
        #expect(all.count == 3 && all.first { $0.topic.hasSuffix("/status") }?.payload == "offline")
        #expect(all.first { $0.topic.hasSuffix("/lines/entrance") }?.payload == second[0].payload)
        // Removed: every topic emptied.
        let removed = Self.shown(s.publications(after: Self.event("input.removed", "door", plugin: nil) { _ in }))
        #expect(Set(removed.map(\.topic)) == Set(all.map(\.topic)) && removed.allSatisfy { $0.payload.isEmpty })
        #expect(s.all().isEmpty)
    }

    @Test("counts kept from a run before (--state): a line's state starts from the counts session.started carries; a reset of counts (analytics.changed, change reset) zeroes a line and leaves a zone's occupancy")
    func keptCounts() {
        let s = MQTTStateTopics(prefix: "cvhost", host: "gate-1", discoveryPrefix: nil)
        var e = JSONObject.envelope(event: "session.started", source: "door", tsNs: 0)
        var line = JSONObject()
        line.set("name", "entrance")
        var counts = JSONObject()
        counts.set("in", 5)
        counts.set("out", 2)
        var person = JSONObject()
        person.set("in", 5)
        person.set("out", 2)
        var labels = JSONObject()
        labels.set("person", object: person)
        counts.set("labels", object: labels)
        line.set("counts", object: counts)
        var zone = JSONObject()
        zone.set("name", "desk")
        var analytics = JSONObject()
        analytics.set("zones", array: [zone])
        analytics.set("lines", array: [line])
        var p = JSONObject()
        p.set("plugin", "walker")
        p.set("analytics", object: analytics)
        e.set("plugins", array: [p])
        let start = Self.shown(s.publications(after: e.line()))
        #expect(start.first { $0.topic.hasSuffix("/lines/entrance") }?.payload == #"{"line":"entrance","in":5,"out":2,"labels":{"person":{"in":5,"out":2}}}"#)
        _ = s.publications(after: Self.occupancy("door", zone: "desk", label: "person", 1))
        for kind in ["line", "zone"] {
            var reset = JSONObject.envelope(event: "analytics.changed", source: nil, tsNs: 0)
            reset.set("kind", kind)
            reset.set("name", kind == "line" ? "entrance" : "desk")
            reset.set("change", "reset")
            reset.set("counts", "reset")
            let shown = Self.shown(s.publications(after: reset.line()))
            #expect(shown.map(\.payload) == (kind == "line" ? [#"{"line":"entrance","in":0,"out":0,"labels":{}}"#] : []), "\(kind): \(shown)")
        }
    }

    @Test("discovery=homeassistant: the host's entity first; per input an online sensor, per line an in and an out sensor, per zone an occupancy sensor and an occupied binary sensor, each with the keys Home Assistant wants")
    func discovery() throws {
        let s = MQTTStateTopics(prefix: "cvhost", host: "gate-1", discoveryPrefix: "homeassistant")
        let opening = Self.shown(s.opening())
        #expect(opening.map(\.topic) == ["homeassistant/binary_sensor/cvhost_gate-1/status/config"])
        let host = Self.json(opening[0].payload)
        #expect(host["state_topic"] as? String == "cvhost/gate-1/status" && host["unique_id"] as? String == "cvhost_gate-1_status")
        #expect((host["device"] as? [String: Any])?["identifiers"] as? [String] == ["cvhost_gate-1"])
        let start = Self.shown(s.publications(after: Self.started("door", lines: ["entrance"], zones: ["desk"])))
        let configs = start.filter { $0.topic.hasPrefix("homeassistant/") }
        #expect(configs.map(\.topic) == [
            "homeassistant/binary_sensor/cvhost_gate-1/door_status/config",
            "homeassistant/sensor/cvhost_gate-1/door_walker_line_entrance_in/config",
            "homeassistant/sensor/cvhost_gate-1/door_walker_line_entrance_out/config",
            "homeassistant/sensor/cvhost_gate-1/door_walker_zone_desk_occupancy/config",
            "homeassistant/binary_sensor/cvhost_gate-1/door_walker_zone_desk_occupied/config",
        ])
        // Configs come before the states they describe.
        #expect(start.firstIndex { $0.topic.hasPrefix("cvhost/") }! > start.lastIndex { $0.topic.hasPrefix("homeassistant/") }!)
        var ids = Set<String>()
        for c in configs {
            let o = Self.json(c.payload)
            let unique = try #require(o["unique_id"] as? String)
            #expect(ids.insert(unique).inserted, "\(unique) twice")
            #expect(o["availability_topic"] as? String == "cvhost/gate-1/status")
            let device = try #require(o["device"] as? [String: Any])
            #expect(device["identifiers"] as? [String] == ["cvhost_gate-1_door"] && device["via_device"] as? String == "cvhost_gate-1"
                    && device["name"] as? String == "door")
            #expect((o["origin"] as? [String: Any])?["name"] as? String == "cvhost")
            #expect(start.contains { $0.topic == o["state_topic"] as? String }, "\(c.topic): its state is published")
        }
        let inSensor = Self.json(configs[1].payload)
        #expect(inSensor["value_template"] as? String == "{{ value_json.in }}" && inSensor["state_class"] as? String == "total_increasing")
        #expect(inSensor["state_topic"] as? String == "cvhost/gate-1/door/walker/lines/entrance")
        let occupied = Self.json(configs[4].payload)
        #expect(occupied["device_class"] as? String == "occupancy")
        // A crossing of a line known: its state only. Of a line not known (a track set later): its configs first.
        #expect(Self.shown(s.publications(after: Self.crossed("door", line: "entrance", label: "person", 1, 0, total: (1, 0)))).count == 1)
        let new = Self.shown(s.publications(after: Self.crossed("door", line: "exit", label: "person", 1, 0, total: (1, 0))))
        #expect(new.map(\.topic) == ["homeassistant/sensor/cvhost_gate-1/door_walker_line_exit_in/config",
                                      "homeassistant/sensor/cvhost_gate-1/door_walker_line_exit_out/config", "cvhost/gate-1/door/walker/lines/exit"])
        // A snapshot's URL: an image entity once, the URL each time.
        var snap = JSONObject.envelope(event: "zone.entered", source: "door", plugin: "walker", tsNs: 0).line()
        snap = snap.with(envelopeField: "snapshot_url", "http://cam-host.lan:8080/snapshots/a.jpg")
        let image = Self.shown(s.publications(after: snap))
        #expect(image.map(\.topic) == ["homeassistant/image/cvhost_gate-1/door_snapshot/config", "cvhost/gate-1/door/snapshot_url"])
        #expect(Self.json(image[0].payload)["url_topic"] as? String == "cvhost/gate-1/door/snapshot_url")
        #expect(image[1].payload == "http://cam-host.lan:8080/snapshots/a.jpg")
        #expect(Self.shown(s.publications(after: snap)).count == 1)
        // A line removed while running (of every input: no input named): its configs and state emptied.
        var change = JSONObject.envelope(event: "analytics.changed", source: nil, tsNs: 0)
        change.set("kind", "line")
        change.set("name", "entrance")
        change.set("change", "removed")
        let gone = Self.shown(s.publications(after: change.line()))
        #expect(gone.map(\.topic) == ["homeassistant/sensor/cvhost_gate-1/door_walker_line_entrance_in/config",
                                       "homeassistant/sensor/cvhost_gate-1/door_walker_line_entrance_out/config",
                                       "cvhost/gate-1/door/walker/lines/entrance"])
        #expect(gone.allSatisfy { $0.payload.isEmpty })
        // Added again on the input: configs, and its state at 0.
        var added = JSONObject.envelope(event: "analytics.changed", source: "door", tsNs: 0)
        added.set("kind", "zone")
        added.set("name", "bay")
        added.set("change", "added")
        added.set("counts", "reset")
        let bay = Self.shown(s.publications(after: added.line()))
        #expect(bay.map(\.topic) == ["homeassistant/sensor/cvhost_gate-1/door_walker_zone_bay_occupancy/config",
                                      "homeassistant/binary_sensor/cvhost_gate-1/door_walker_zone_bay_occupied/config",
                                      "cvhost/gate-1/door/walker/zones/bay"])
        // The input removed: every config of it and every state emptied; the host's stays.
        let removed = Self.shown(s.publications(after: Self.event("input.removed", "door", plugin: nil) { _ in }))
        #expect(removed.allSatisfy { $0.payload.isEmpty })
        #expect(Set(removed.map(\.topic)).isSuperset(of: ["homeassistant/binary_sensor/cvhost_gate-1/door_status/config",
                                                           "homeassistant/image/cvhost_gate-1/door_snapshot/config",
                                                           "homeassistant/sensor/cvhost_gate-1/door_walker_line_exit_in/config",
                                                           "homeassistant/binary_sensor/cvhost_gate-1/door_walker_zone_desk_occupied/config",
                                                           "cvhost/gate-1/door/status", "cvhost/gate-1/door/snapshot_url"]))
        #expect(Self.shown(s.all()).map(\.topic) == ["homeassistant/binary_sensor/cvhost_gate-1/status/config"])
    }

    @Test("ids Home Assistant takes: letters, digits, _ and -; a name that had to change gets a hash, so two never meet")
    func ids() {
        #expect(HomeAssistantDiscovery.id("door_walker_line_a-b") == "door_walker_line_a-b")
        let a = HomeAssistantDiscovery.id("cam 1/x"), b = HomeAssistantDiscovery.id("cam_1_x")
        #expect(a.hasPrefix("cam_1_x_") && a.count == "cam_1_x_".count + 8 && b == "cam_1_x" && a != b)
        #expect(HomeAssistantDiscovery.id(String(repeating: "x", count: 200)).count == 89)
    }

    @Test("--output mqtt options: counts=, discovery=homeassistant with its prefix; refusals say what to write")
    func options() throws {
        guard case .mqtt(let m) = try OutputDestination(parsing: "mqtt://h/cv?discovery=homeassistant&discovery_prefix=ha/x") else { Issue.record("not mqtt"); return }
        #expect(m.discoveryPrefix == "ha/x" && m.keepsStates && !m.counts)
        guard case .mqtt(let c) = try OutputDestination(parsing: "mqtt://h?counts=true") else { Issue.record("not mqtt"); return }
        #expect(c.counts && c.discoveryPrefix == nil && c.keepsStates)
        guard case .mqtt(let plain) = try OutputDestination(parsing: "mqtt://h?discovery=homeassistant") else { Issue.record("not mqtt"); return }
        #expect(plain.discoveryPrefix == "homeassistant")
        for text in ["mqtt://h?discovery=openhab", "mqtt://h?discovery_prefix=ha", "mqtt://h?discovery=homeassistant&discovery_prefix=a/+",
                     "mqtt://h?counts=yes", "nats://h?discovery=homeassistant"] {
            #expect(throws: OutputDestination.ParseError.self, "\(text)") { try OutputDestination(parsing: text) }
        }
    }

    @Test("--motion: session.started with motion settings makes a motion topic, OFF, and Home Assistant's motion binary sensor; motion.started ON, motion.ended OFF; an input without it none; removed: emptied")
    func motion() {
        let s = MQTTStateTopics(prefix: "cvhost", host: "gate-1", discoveryPrefix: "homeassistant")
        _ = s.opening()
        var e = JSONObject.envelope(event: "session.started", source: "door", tsNs: 0)
        var settings = JSONObject()
        settings.set("threshold", 30)
        e.set("motion", object: settings)
        let start = Self.shown(s.publications(after: e.line()))
        let config = start.first { $0.topic == "homeassistant/binary_sensor/cvhost_gate-1/door_motion/config" }
        #expect(Self.json(config?.payload ?? "")["device_class"] as? String == "motion", "\(start)")
        #expect(Self.json(config?.payload ?? "")["state_topic"] as? String == "cvhost/gate-1/door/motion")
        #expect(start.first { $0.topic == "cvhost/gate-1/door/motion" }?.payload == "OFF")
        var started = JSONObject.envelope(event: "motion.started", source: "door", tsNs: 0)
        started.set("changed", 0.1, decimals: 3)
        #expect(Self.shown(s.publications(after: started.line())).map(\.payload) == ["ON"])
        let ended = JSONObject.envelope(event: "motion.ended", source: "door", tsNs: 0)
        #expect(Self.shown(s.publications(after: ended.line())).map(\.payload) == ["OFF"])
        // An input whose motion is not looked for: no topic, and its motion lines change nothing.
        var other = JSONObject.envelope(event: "session.started", source: "yard", tsNs: 0)
        other.set("motion", nil as String?)
        #expect(!Self.shown(s.publications(after: other.line())).contains { $0.topic.hasSuffix("/motion") || $0.topic.contains("yard_motion") })
        #expect(s.publications(after: JSONObject.envelope(event: "motion.started", source: "yard", tsNs: 0).line()).isEmpty)
        let removed = Self.shown(s.publications(after: Self.event("input.removed", "door", plugin: nil) { _ in }))
        #expect(removed.contains { $0.topic == "cvhost/gate-1/door/motion" && $0.payload.isEmpty }, "\(removed)")
        #expect(removed.contains { $0.topic == "homeassistant/binary_sensor/cvhost_gate-1/door_motion/config" && $0.payload.isEmpty }, "\(removed)")
    }
}
