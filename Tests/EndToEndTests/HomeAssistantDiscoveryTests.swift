import CVHostTestSupport
import Foundation
import Testing

/// An MQTT output for Home Assistant (`discovery=homeassistant`) and brokers spared what they did
/// not ask for (`events=`), against a real mosquitto on loopback: the configs as Home Assistant's
/// MQTT discovery documents them, the retained states after a run of known counts, and the configs
/// removed with their input.
@Suite("Home Assistant's discovery and an output's events=", .serialized)
struct HomeAssistantDiscoveryTests {
    /// Every key Home Assistant's MQTT discovery documents for the components cvhost uses (its
    /// pages "MQTT Sensor", "MQTT Binary sensor", "MQTT Image", and "MQTT Discovery" for `device`
    /// and `origin`): a key not here would be one it ignores or refuses.
    static let documented: [String: Set<String>] = {
        let common: Set<String> = ["availability_topic", "payload_available", "payload_not_available", "device", "device_class",
                                   "entity_category", "icon", "json_attributes_template", "json_attributes_topic", "name", "origin",
                                   "unique_id", "value_template", "state_topic", "enabled_by_default", "qos"]
        return ["sensor": common.union(["state_class", "unit_of_measurement", "expire_after", "force_update", "suggested_display_precision"]),
                "binary_sensor": common.union(["payload_on", "payload_off", "expire_after", "force_update", "off_delay"]),
                "image": common.subtracting(["state_topic", "value_template"]).union(["url_topic", "url_template", "image_topic", "content_type"])]
    }()
    static let deviceKeys: Set<String> = ["identifiers", "connections", "name", "manufacturer", "model", "sw_version", "hw_version",
                                          "via_device", "suggested_area", "configuration_url", "serial_number"]
    static let originKeys: Set<String> = ["name", "sw_version", "support_url"]

    /// The retained messages the broker holds now, by topic: what Home Assistant reads when it connects.
    static func retained(_ broker: MQTTBroker) throws -> [String: String] {
        // -W ends it by SIGALRM, which the test runner's threads block (and a child inherits): unblocked.
        let file = TestFolders.make("retained") + "/messages.txt"
        _ = FileManager.default.createFile(atPath: file, contents: nil)
        let p = Tool.withSignalsUnblocked("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-t", "#", "-v", "--retained-only", "-W", "3"])
        p.standardOutput = FileHandle(forWritingAtPath: file)
        p.standardError = FileHandle.standardError
        p.standardInput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        var found: [String: String] = [:]
        for line in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n") where line.hasPrefix("cvhost/") || line.hasPrefix("ha/") || line.hasPrefix("homeassistant/") {
            let space = line.firstIndex(of: " ") ?? line.endIndex
            found[String(line[..<space])] = String(line[space...].dropFirst())
        }
        return found
    }

    static func json(_ text: String?) -> [String: Any] {
        text.flatMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] } ?? [:]
    }

    @Test("a run of one crossing into a zone, with snapshots and a public URL: the broker gets only the events asked for (no result); Home Assistant's configs have the documented keys, each state topic is retained with the run's counts, the input and cvhost offline at the end; the snapshot's URL is the public one, whose host is answered")
    func discoveryAfterARun() throws {
        let broker = try MQTTBroker()
        let subscriber = try MQTTSubscriber(port: broker.port, topic: "cvhost/#")
        let port = freeLoopbackPort()
        let snapshots = TestFolders.make("discovery") + "/snapshots-\(UUID().uuidString.prefix(8))"
        var publicHost = 0
        let r = try CVHostBinary.run(["run", "--plugin", try AnalyticsTests.walker(), "--input", "hall=testsrc:320x240@10:unpaced", "--max-frames", "26",
                                      "--metrics-interval", "0", "--track", "walker", "--line", "door=160,0 160,240:in=left",
                                      "--zone", "right=170,0 320,0 320,240 170,240", "--snapshots", snapshots + ":on=line.crossed",
                                      "--http", "127.0.0.1:\(port)", "--http-public-url", "http://cam-host.lan:\(port)/cv/", "--http-linger", "3",
                                      "--output", "mqtt://127.0.0.1:\(broker.port)/cvhost?discovery=homeassistant&events=line.crossed+zone.*",
                                      "--output", "-"], timeout: 90, environment: AnalyticsTests.python, withStdin: false) { run in
            // A request that came by the public address (its Host) is answered: 200, not 421.
            guard run.wait(timeout: 60, until: { $0.contains(#""event":"line.crossed""#) }) else { return }
            publicHost = (try? LiveViewTests.http(port, "/snapshots", headers: ["Host: cam-host.lan:\(port)"]).status) ?? 0
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(publicHost == 200)
        let url = try #require(r.events("line.crossed").first?["snapshot_url"] as? String)
        #expect(url.hasPrefix("http://cam-host.lan:\(port)/cv/snapshots/"), "\(url)")
        #expect(r.events("session.started").first?["http"] as? String == "http://cam-host.lan:\(port)/cv")
        let host = try #require(r.events.first?["host"] as? String)
        // Only what was asked for, of the lines' own topics.
        let got = subscriber.wait { m in m.contains { $0.topic.hasSuffix("/zone.exited") } && m.contains { $0.topic == "cvhost/\(host)/status" && $0.payload == "offline" } }
        let events = Set(got.compactMap { m -> String? in
            let levels = m.topic.split(separator: "/")
            return levels.count == 5 ? String(levels[4]) : nil
        })
        #expect(events == ["line.crossed", "zone.entered", "zone.exited", "zone.occupancy"], "\(events)")
        #expect(got.filter { $0.topic.hasSuffix("/line.crossed") }.map(\.payload) == r.lines.filter { $0.contains(#""event":"line.crossed""#) })

        let kept = try Self.retained(broker)
        let configs = kept.filter { $0.key.hasPrefix("homeassistant/") }
        // cvhost; the input's online and snapshot; the line's in, out; the zone's occupancy, occupied
        #expect(configs.count == 7, "\(configs.keys.sorted())")
        var ids = Set<String>()
        for (topic, payload) in configs {
            let levels = topic.split(separator: "/")
            #expect(levels.count == 5 && levels.last == "config" && levels[2] == "cvhost_\(host)", "\(topic)")
            let component = String(levels[1])
            let keys = try #require(Self.documented[component], "\(topic): a component cvhost does not use")
            let o = Self.json(payload)
            #expect(Set(o.keys).isSubset(of: keys), "\(topic): \(Set(o.keys).subtracting(keys)) are not documented")
            #expect(o["name"] is String && ids.insert(o["unique_id"] as? String ?? "").inserted, "\(topic)")
            let device = o["device"] as? [String: Any] ?? [:]
            #expect(Set(device.keys).isSubset(of: Self.deviceKeys) && (device["identifiers"] as? [String])?.isEmpty == false, "\(topic)")
            #expect(Set((o["origin"] as? [String: Any] ?? [:]).keys).isSubset(of: Self.originKeys))
            // What it reads is retained, and its availability is cvhost's status.
            let state = try #require(o["state_topic"] as? String ?? o["url_topic"] as? String, "\(topic)")
            #expect(kept[state] != nil, "\(topic): its state \(state) is not retained")
            if o["availability_topic"] != nil { #expect(o["availability_topic"] as? String == "cvhost/\(host)/status") }
        }
        let line = Self.json(kept["cvhost/\(host)/hall/walker/lines/door"])
        #expect(line["in"] as? Int == 1 && line["out"] as? Int == 0 && (line["labels"] as? [String: Any])?["person"] != nil, "\(line)")
        // The walker was inside at the input's end, as cvhost says of it (the end of an input is no one leaving).
        #expect(Self.json(kept["cvhost/\(host)/hall/walker/zones/right"])["occupancy"] as? Int == 1)
        #expect(kept["cvhost/\(host)/hall/status"] == "offline" && kept["cvhost/\(host)/status"] == "offline")
        #expect(kept["cvhost/\(host)/hall/snapshot_url"] == url)
        let inSensor = Self.json(configs.first { $0.key.hasSuffix("_line_door_in/config") }?.value)
        #expect(inSensor["value_template"] as? String == "{{ value_json.in }}" && inSensor["state_class"] as? String == "total_increasing")
    }

    @Test("an input removed over HTTP while the run goes on: its entities' configs and states are gone from the broker; the other input's stay")
    func removedWithItsInput() throws {
        let broker = try MQTTBroker()
        let port = freeLoopbackPort()
        let r = try CVHostBinary.run(["run", "--plugin", try AnalyticsTests.walker(lap: 30), "--track", "walker", "--line", "door=160,0 160,240",
                                      "--input", "a=testsrc:320x240@10", "--input", "b=testsrc:320x240@10", "--http", "127.0.0.1:\(port)",
                                      "--metrics-interval", "0",
                                      "--output", "mqtt://127.0.0.1:\(broker.port)/cvhost?discovery=homeassistant&discovery_prefix=ha",
                                      "--output", "-"], timeout: 120, environment: AnalyticsTests.python, withStdin: false) { run in
            defer { kill(run.pid, SIGTERM) }
            guard run.wait(timeout: 60, until: { RunChangesTests.of(RunChangesTests.lines($0), "line.crossed", source: "b").count >= 1 }) else { return }
            _ = try? RunChangesTests.send(port, "DELETE", "/inputs/b")
            run.wait(timeout: 60) { RunChangesTests.of(RunChangesTests.lines($0), "input.removed", source: "b").count == 1 }
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(r.events("input.removed").count == 1, "\(r.stderr)")
        let host = try #require(r.events.first?["host"] as? String)
        let kept = try Self.retained(broker)
        let configs = kept.keys.filter { $0.hasPrefix("ha/") }.sorted()
        #expect(configs == ["ha/binary_sensor/cvhost_\(host)/a_status/config", "ha/binary_sensor/cvhost_\(host)/status/config",
                            "ha/sensor/cvhost_\(host)/a_walker_line_door_in/config", "ha/sensor/cvhost_\(host)/a_walker_line_door_out/config"],
                "\(configs)")
        #expect(!kept.keys.contains { $0.hasPrefix("cvhost/\(host)/b/") }, "\(kept.keys.sorted())")
        #expect(Self.json(kept["cvhost/\(host)/a/walker/lines/door"])["in"] as? Int ?? 0 >= 1)
    }

    @Test("refusals, one line each, exit 64: an event no line has, discovery for another system, a discovery prefix alone")
    func refusals() throws {
        for (output, says) in [("file:/tmp/x.jsonl?events=result+line.crosed", "'line.crosed' is no event cvhost writes"),
                               ("mqtt://127.0.0.1?discovery=openhab", "write discovery=homeassistant"),
                               ("mqtt://127.0.0.1?discovery_prefix=ha", "discovery_prefix= is for discovery=homeassistant")] {
            let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "--max-frames", "1", "--output", output])
            #expect(r.exitCode == 64 && r.stderr.contains(says) && r.stderr.split(separator: "\n").count == 1, "\(output): \(r.stderr)")
        }
    }

    @Test("--motion with discovery: a square crossing a still scene turns the input's retained motion topic ON then OFF, and Home Assistant gets a motion binary sensor with the documented keys")
    func motionSensor() throws {
        let broker = try MQTTBroker()
        let subscriber = try MQTTSubscriber(port: broker.port, topic: "cvhost/#")
        let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", "door=" + (try MediaFixtures.motionClip()), "--motion", "on", "-q",
                                      "--output", "mqtt://127.0.0.1:\(broker.port)/cvhost?discovery=homeassistant&events=motion.*", "--output", "-"],
                                     timeout: 60)
        #expect(r.exitCode == 22, "\(r.stderr)")  // the null plugin writes no result
        let host = try #require(r.events.first?["host"] as? String)
        let got = subscriber.wait { m in m.contains { $0.topic == "cvhost/\(host)/status" && $0.payload == "offline" } }
        #expect(got.filter { $0.topic == "cvhost/\(host)/door/motion" }.map(\.payload) == ["OFF", "ON", "OFF"], "\(got.map(\.topic))")
        let retained = try Self.retained(broker)
        let config = Self.json(retained["homeassistant/binary_sensor/cvhost_\(host)/door_motion/config"])
        #expect(config["device_class"] as? String == "motion" && config["state_topic"] as? String == "cvhost/\(host)/door/motion", "\(retained.keys.sorted())")
        #expect(Set(config.keys).isSubset(of: Self.documented["binary_sensor"]!), "\(config.keys)")
        #expect(retained["cvhost/\(host)/door/motion"] == "OFF")
    }
}
