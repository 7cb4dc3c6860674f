import CVHostTestSupport
import Foundation
import Testing

/// `--output mqtt://…` against a real mosquitto broker on loopback (started here), read by a real
/// subscriber (mosquitto_sub).
@Suite("MQTT output", .serialized)
struct MQTTOutputTests {
    static let folder = NSTemporaryDirectory() + "cvhost-mqtt-tests-\(getpid())"

    /// Lines as a subscriber of `PREFIX/#` got them, by topic, status topic apart.
    static func byTopic(_ messages: [(topic: String, payload: String)]) -> [String: [String]] {
        Dictionary(grouping: messages.filter { !$0.topic.hasSuffix("/status") }, by: \.topic).mapValues { $0.map(\.payload) }
    }

    /// The topic a stdout line is published on (the layout in the README).
    static func topic(of event: [String: Any], prefix: String = "cvhost") -> String {
        func level(_ v: Any?) -> String {
            guard let s = v as? String, !s.isEmpty else { return "_" }
            return String(s.map { "/+#".contains($0) ? "_" : $0 })
        }
        return [prefix, level(event["host"]), level(event["source"]), level(event["plugin"]), level(event["event"])].joined(separator: "/")
    }

    static func finalOutput(_ r: CommandResult, named prefix: String) -> [String: Any]? {
        let final = r.events("metrics").last { $0["final"] as? Bool == true }
        return (final?["output"] as? [[String: Any]])?.first { ($0["output"] as? String)?.hasPrefix(prefix) == true }
    }

    @Test("every line published arrives at a subscriber exactly as the stdout line, in order per topic; status online, then offline")
    func everyLine() throws {
        let broker = try MQTTBroker()
        let subscriber = try MQTTSubscriber(port: broker.port, topic: "cvhost/#")
        let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", "demo=" + BarcodeFixtures.demoVideo,
                                      "--output", "mqtt://127.0.0.1:\(broker.port)/cvhost", "--output", "-"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        let got = subscriber.wait { m in m.contains { $0.payload.contains("\"event\":\"session.stopped\"") } && m.last?.payload == "offline" }
        // Per topic, the payloads are the stdout lines of that topic, byte for byte and in order.
        var expected: [String: [String]] = [:]
        // (output.connected is news for the other outputs: it is not published to the broker it is about.)
        for (line, event) in zip(r.lines, r.events) where event["event"] as? String != "output.connected" {
            expected[MQTTOutputTests.topic(of: event), default: []].append(line)
        }
        let received = MQTTOutputTests.byTopic(got)
        #expect(received == expected, "topics \(received.keys.sorted()) vs \(expected.keys.sorted())")
        let host = try #require(r.events.first?["host"] as? String)
        #expect(received["cvhost/\(host)/demo/barcode/result"]?.count == 240)
        #expect(received["cvhost/\(host)/demo/_/session.started"]?.count == 1)
        #expect(got.filter { $0.topic == "cvhost/\(host)/status" }.map(\.payload) == ["online", "offline"])
        let output = try #require(MQTTOutputTests.finalOutput(r, named: "mqtt://"))
        #expect(output["connected"] as? Bool == true && (output["dropped"] as? [String: Int])?.values.allSatisfy { $0 == 0 } == true)

        // The README's command: the broker alone, nothing on stdout, every result at the subscriber.
        let only = try MQTTSubscriber(port: broker.port, topic: "cvhost/+/+/barcode/result")
        let alone = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", BarcodeFixtures.demoVideo,
                                          "--output", "mqtt://127.0.0.1:\(broker.port)/cvhost"])
        #expect(alone.exitCode == 0 && alone.stdout.isEmpty, "\(alone.stderr)")
        #expect(only.wait { $0.count >= 240 }.count == 240)
    }

    /// Runs a live source for 6 s publishing to a broker that is stopped after 2 s and started
    /// again 1 s later. - Returns: cvhost's result and what the subscriber got.
    static func runThroughRestart(queue: Int) throws -> (CommandResult, [(topic: String, payload: String)]) {
        let broker = try MQTTBroker()
        let subscriber = try MQTTSubscriber(port: broker.port, topic: "cvhost/#")
        let restarted = Box(false)
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=2", "--input", "testsrc:160x120@50", "--duration", "6",
                                      "--metrics-interval", "1", "--output", "mqtt://127.0.0.1:\(broker.port)/cvhost?queue=\(queue)",
                                      "--output", "-"], timeout: 60) { _ in
            Thread.detachNewThread {
                usleep(2_000_000)
                broker.stop()
                usleep(1_000_000)
                restarted.value = (try? broker.start()) != nil
            }
        }
        #expect(restarted.value, "the broker started again")
        let got = subscriber.wait(timeout: 20) { m in m.contains { $0.payload.contains("\"event\":\"session.stopped\"") } }
        return (r, got)
    }

    @Test("the broker stopped mid-run and started again: with a queue large enough, no line is lost")
    func brokerRestart() throws {
        let (r, got) = try MQTTOutputTests.runThroughRestart(queue: 100_000)
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        // The outage is told on stdout, the other output.
        #expect(r.events("output.disconnected").count >= 1 && r.events("output.connected").count >= 1, "\(r.stderr)")
        let published = r.lines.filter { !$0.contains("\"event\":\"output.") }
        let results = published.filter { $0.contains("\"event\":\"result\"") }
        // Results were made while the broker was away (how many is the machine's pace): those
        // are the lines the queue had to keep.
        let lines = r.lines
        let away = try #require(lines.firstIndex { $0.contains("\"event\":\"output.disconnected\"") })
        let back = try #require(lines.lastIndex { $0.contains("\"event\":\"output.connected\"") })
        #expect(lines[away..<back].contains { $0.contains("\"event\":\"result\"") }, "no result while the broker was away")
        // At least once: duplicates are allowed, losses are not; first arrivals keep stdout's order per topic.
        let received = MQTTOutputTests.byTopic(got)
        var firstArrivals: [String: [String]] = [:]
        for (topic, payloads) in received {
            var seen = Set<String>()
            firstArrivals[topic] = payloads.filter { seen.insert($0).inserted }
        }
        let host = try #require(r.events.first?["host"] as? String)
        #expect(firstArrivals["cvhost/\(host)/testsrc:160x120@50/null/result"] == results, "lost \(Set(results).subtracting(got.map(\.payload)).count) results")
        #expect(Set(published).subtracting(got.map(\.payload)).isEmpty)
    }

    @Test("the broker stopped mid-run with a small queue: the lines lost are exactly the lines counted as dropped")
    func brokerRestartSmallQueue() throws {
        let (r, got) = try MQTTOutputTests.runThroughRestart(queue: 20)
        #expect(r.exitCode == 4, "\(r.stderr)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        let published = Set(r.lines.filter { !$0.contains("\"event\":\"output.") })
        let lost = published.subtracting(got.map(\.payload)).count
        let output = try #require(MQTTOutputTests.finalOutput(r, named: "mqtt://"))
        let dropped = try #require(output["dropped"] as? [String: Int])
        #expect(lost > 0 && dropped["queue_full"] == lost, "lost \(lost), counted \(dropped)")
        #expect(dropped["unsent"] == 0 && dropped["rejected"] == 0)
        #expect(r.stderr.contains("\(lost) lines did not reach mqtt://127.0.0.1"), "\(r.stderr)")
    }

    @Test("cvhost killed with SIGKILL: the subscriber sees the retained offline will")
    func killedLeavesWill() throws {
        let broker = try MQTTBroker()
        let status = try MQTTSubscriber(port: broker.port, topic: "cvhost/+/status")
        let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc:160x120@10", "--duration", "30",
                                      "--output", "mqtt://127.0.0.1:\(broker.port)/cvhost"], timeout: 40) { p in
            _ = status.wait(timeout: 10) { $0.contains { $0.payload == "online" } }
            kill(p.processIdentifier, SIGKILL)
        }
        #expect(r.exitCode == SIGKILL || r.exitCode == 128 + SIGKILL || r.exitCode != 0)
        #expect(status.wait { $0.last?.payload == "offline" }.map(\.payload) == ["online", "offline"])
        // Retained: a subscriber that comes later still learns that this host is offline.
        let later = try MQTTSubscriber(port: broker.port, topic: "cvhost/+/status")
        #expect(later.wait { !$0.isEmpty }.map(\.payload) == ["offline"])
    }

    @Test("wrong credentials: required=true is exit 5, else output.disconnected and the run goes on; the password is never shown")
    func wrongCredentials() throws {
        let broker = try MQTTBroker(.init(users: ["cam": "right-horse"]))
        let url = "mqtt://cam:battery-staple@127.0.0.1:\(broker.port)/cvhost"
        let args = ["run", "--plugin", "null:results=1", "--input", "testsrc:160x120:unpaced", "--max-frames", "5"]
        let required = try CVHostBinary.run(args + ["--output", url + "?required=true"])
        #expect(required.exitCode == 5 && required.stderr.contains("not authori"), "\(required.stderr)")
        #expect(required.stderr.contains("mqtt://cam:***@127.0.0.1"))
        let goesOn = try CVHostBinary.run(args + ["--output", url + "?drain=1", "--output", "-"])
        #expect(goesOn.exitCode == 4, "\(goesOn.stderr)")
        let down = try #require(goesOn.events("output.disconnected").first)
        #expect((down["reason"] as? String)?.contains("not authori") == true && down["output"] as? String == "mqtt://cam:***@127.0.0.1:\(broker.port)/cvhost")
        #expect(goesOn.events("result").count == 5)
        for text in [required.stdout, required.stderr, goesOn.stdout, goesOn.stderr] { #expect(!text.contains("battery-staple")) }
        // The right password from the environment (not on the command line) is let in.
        let subscriber = try MQTTSubscriber(port: broker.port, topic: "cvhost/#", arguments: ["-u", "cam", "-P", "right-horse"])
        let right = try CVHostBinary.run(args + ["--output", "mqtt://cam@127.0.0.1:\(broker.port)/cvhost?required=true"],
                                         environment: ["CVHOST_MQTT_PASSWORD": "right-horse"])
        #expect(right.exitCode == 0, "\(right.stderr)")
        #expect(subscriber.wait { $0.filter { $0.topic.hasSuffix("/result") }.count >= 5 }.filter { $0.topic.hasSuffix("/result") }.count == 5)
    }

    @Test("no broker on the port: required=true is exit 5 naming it, else the run goes on and tells output.disconnected")
    func refusedPort() throws {
        let port = freeLoopbackPort()
        let args = ["run", "--plugin", "null:results=1", "--input", "testsrc:160x120:unpaced", "--max-frames", "5"]
        let required = try CVHostBinary.run(args + ["--output", "mqtt://127.0.0.1:\(port)/cvhost?required=true"])
        #expect(required.exitCode == 5 && required.stderr.contains("cannot connect to mqtt://127.0.0.1:\(port)/cvhost: Connection refused"),
                "\(required.stderr)")
        #expect(required.stdout.isEmpty)
        let goesOn = try CVHostBinary.run(args + ["--output", "mqtt://127.0.0.1:\(port)/cvhost?drain=0", "--output", "-"])
        #expect(goesOn.exitCode == 4, "\(goesOn.stderr)")
        #expect(try CVHostBinary.schemaProblems(goesOn.stdout) == nil)
        #expect(goesOn.events("output.disconnected").first?["reason"] as? String == "Connection refused")
        #expect(goesOn.events("result").count == 5 && goesOn.events("session.stopped").count == 1)
        let output = try #require(MQTTOutputTests.finalOutput(goesOn, named: "mqtt://"))
        #expect(output["connected"] as? Bool == false)
        #expect(goesOn.stderr.contains("lines did not reach mqtt://127.0.0.1:\(port)/cvhost (unsent"), "\(goesOn.stderr)")
    }

    @Test("mqtts:// with the CA that signed the broker's certificate delivers; with another CA it is refused")
    func tls() throws {
        let ca = try TestCA(in: MQTTOutputTests.folder, name: "right")
        let other = try TestCA(in: MQTTOutputTests.folder, name: "other")
        let broker = try MQTTBroker(.init(tls: (ca.serverCertificate, ca.serverKey)))
        let subscriber = try MQTTSubscriber(port: broker.port, topic: "cvhost/#", arguments: ["--cafile", ca.certificate])
        let args = ["run", "--plugin", "null:results=1", "--input", "testsrc:160x120:unpaced", "--max-frames", "5"]
        let good = try CVHostBinary.run(args + ["--output", "mqtts://127.0.0.1:\(broker.port)/cvhost?ca=\(ca.certificate)&required=true"])
        #expect(good.exitCode == 0, "\(good.stderr)")
        #expect(subscriber.wait { $0.filter { $0.topic.hasSuffix("/result") }.count >= 5 }.filter { $0.topic.hasSuffix("/result") }.count == 5)
        let wrong = try CVHostBinary.run(args + ["--output", "mqtts://127.0.0.1:\(broker.port)/cvhost?ca=\(other.certificate)&required=true"])
        #expect(wrong.exitCode == 5 && wrong.stderr.contains("TLS handshake failed"), "\(wrong.stderr)")
    }
}
