import CVHostTestSupport
import Foundation
import Testing

/// A broker the spool tests stop and start, and read after the runs.
protocol SpooledBroker {
    var name: String { get }
    /// The --output URL, with `query` as its options.
    func url(query: String) -> String
    func down() throws
    func up() throws
    /// The lines a consumer got, in the order it got them (per input), once it has at least `count` distinct ones (or 60 s passed).
    func received(atLeast count: Int) throws -> [String]
}

struct MQTTSpooled: SpooledBroker {
    let broker: MQTTBroker
    let subscriber: MQTTSubscriber
    init() throws {
        broker = try MQTTBroker()
        subscriber = try MQTTSubscriber(port: broker.port, topic: "cvhost/#")
    }
    var name: String { "mqtt" }
    func url(query: String) -> String { "mqtt://127.0.0.1:\(broker.port)/cvhost?\(query)" }
    func down() throws { broker.stop() }
    func up() throws { try broker.start() }
    func received(atLeast count: Int) throws -> [String] {
        // The status topic's online/offline are not lines.
        subscriber.wait(timeout: 60) { Set($0.map(\.payload)).count >= count + 2 }.map(\.payload).filter { $0.hasPrefix("{") }
    }
}

struct KafkaSpooled: SpooledBroker {
    let cluster: KafkaCluster
    init() throws { cluster = try KafkaCluster(topic: "results") }
    var name: String { "kafka" }
    // Compressed: the mock cluster keeps a bounded log a partition (its oldest message sets go past a
    // few MB), and 20,000 lines of one input in one partition would outgrow it.
    func url(query: String) -> String { "kafka://\(cluster.bootstrap)/results?compression=lz4&\(query)" }
    func down() throws { try cluster.command("alldown") }
    func up() throws { try cluster.command("allup") }
    func received(atLeast count: Int) throws -> [String] {
        let deadline = Date().addingTimeInterval(60)
        var got = try cluster.messages(topic: "results").map(\.payload)
        while Set(got).count < count && Date() < deadline {
            usleep(500_000)
            got = try cluster.messages(topic: "results").map(\.payload)
        }
        return got
    }
}

struct NATSSpooled: SpooledBroker {
    let server: NATSServer
    init() throws { server = try NATSServer() }
    var name: String { "nats" }
    func url(query: String) -> String { "nats://127.0.0.1:\(server.port)/cvhost?\(query)" }
    func down() throws { server.stop() }
    func up() throws { try server.start() }
    func received(atLeast count: Int) throws -> [String] {
        let deadline = Date().addingTimeInterval(60)
        var got = try server.messages().map(\.payload)
        while Set(got).count < count && Date() < deadline {
            usleep(500_000)
            got = try server.messages().map(\.payload)
        }
        return got
    }
}

/// Every broker output with a spool on disk: 20,000 results through two outages (the first longer
/// than the memory queue holds) and a SIGKILL while the broker is away; a Kafka cluster away at
/// start; a full spool; a required broker that never answers, a NATS stream that cannot be made;
/// a broker output's /metrics.
@Suite("Broker outputs: at least once, through outages and a kill", .serialized)
struct BrokerSpoolTests {
    static func count(_ text: String, _ needle: String) -> Int { text.components(separatedBy: needle).count - 1 }
    static let result = "\"event\":\"result\""

    static func eventID(_ line: String) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["event_id"] as? String
    }

    /// Two runs of 10,000 results each with one spool: the first through an outage of 3,000
    /// results or more (the queue holds 1,000), then killed while the broker is away again with
    /// its last lines undelivered; the second started while the broker is still away.
    static func survives(_ b: SpooledBroker) throws {
        let spool = TestFolders.make("spool-\(b.name)") + "/spool"
        // block: every frame of the live test pattern gets its results, however loaded the machine.
        let args = ["run", "--plugin", "null:results=10,backpressure=block", "--input", "cam=testsrc:64x48@250", "--max-frames", "1000",
                    "--metrics-interval", "1", "--output", b.url(query: "spool=\(spool)&queue=1000&drain=60"), "--output", "-"]
        let first = try CVHostBinary.run(args, timeout: 180, withStdin: false) { running in
            _ = running.wait(timeout: 60) { count($0, result) >= 1000 }
            try? b.down()
            _ = running.wait(timeout: 60) { count($0, result) >= 4500 }
            try? b.up()
            _ = running.wait(timeout: 60) { count($0, result) >= 6500 }
            try? b.down()
            // The input has ended and the output waits for its broker (drain=60): killed.
            _ = running.wait(timeout: 60) { $0.contains("\"event\":\"session.stopped\"") }
            usleep(300_000)
            kill(running.pid, SIGKILL)
        }
        #expect(first.exitCode != 0 && count(first.stdout, result) == 10_000, "exit \(first.exitCode), \(count(first.stdout, result)) results: \(first.stderr.suffix(2000))")
        let second = try CVHostBinary.run(args, timeout: 180, withStdin: false) { running in
            _ = running.wait(timeout: 60) { count($0, result) >= 2000 }
            try? b.up()
        }
        #expect(second.exitCode == 0, "\(second.stderr.suffix(2000))")
        #expect(second.stderr.contains("lines from an earlier run, sent first"), "\(second.stderr.suffix(2000))")

        // Every line of both runs (but the output's own news, which goes to the other outputs).
        let written = (first.lines + second.lines).filter { !$0.contains("\"event\":\"output.") }
        let got = try b.received(atLeast: Set(written).count)
        let missing = Set(written).subtracting(got)
        #expect(missing.isEmpty, "\(b.name): \(missing.count) of \(written.count) lines did not arrive (\(got.count) received), e.g. \(missing.first?.prefix(300) ?? "")")
        // Duplicates only where the event id says so: one line per event id.
        let byID = Dictionary(grouping: got, by: { eventID($0) ?? "none" })
        #expect(byID.values.allSatisfy { Set($0).count == 1 } && byID["none"] == nil)
        #expect(Set(got).isSubset(of: Set(written)))
        // In order per input: the first arrival of each result, as both runs wrote them.
        var seen = Set<String>()
        let results = got.filter { $0.contains(result) && seen.insert($0).inserted }
        let wrote = written.filter { $0.contains(result) }
        #expect(results == wrote, "\(b.name): results out of order or missing (\(results.count) of \(wrote.count))")
        // The second run sent the first's spooled lines again and lost none; its spool is empty at the end:
        // one segment, the cursor at its end.
        let output = try #require(MQTTOutputTests.finalOutput(second, named: b.name + "://"))
        #expect((output["resent"] as? Int ?? 0) > 0 && output["spooled"] != nil, "\(output)")
        #expect((output["dropped"] as? [String: Int])?.values.allSatisfy { $0 == 0 } == true, "\(output)")
        let segments = try FileManager.default.contentsOfDirectory(atPath: spool).filter { $0.hasSuffix(".spool") }
        let cursor = try String(contentsOfFile: spool + "/cursor", encoding: .utf8).split(separator: " ")
        let size = try FileManager.default.attributesOfItem(atPath: spool + "/" + (segments.first ?? "none"))[.size] as? Int
        #expect(segments.count == 1 && cursor.count >= 3 && Int(cursor[2]) == size, "\(segments) \(cursor)")
    }

    @Test("Kafka (librdkafka's mock cluster): 20,000 results through two outages and a kill arrive, in order, duplicates only by event id")
    func kafka() throws {
        let b = try KafkaSpooled()
        try Self.survives(b)
        // Keyed by the input, with the event's headers.
        let m = try #require(try b.cluster.messages(topic: "results").first { $0.payload.contains(Self.result) })
        #expect(m.key == "cam" && m.headers.contains("cvhost-event=result") && m.headers.contains("cvhost-event-id="), "\(m)")
    }

    @Test("NATS JetStream (nats-server): 20,000 results through two outages and a kill arrive, in order, each stored once by its Nats-Msg-Id")
    func nats() throws {
        let b = try NATSSpooled()
        try Self.survives(b)
        let stored = try b.server.messages()
        // The server dropped what it already had: one message an event id.
        #expect(Set(stored.map(\.id)).count == stored.count && stored.allSatisfy { $0.id == Self.eventID($0.payload) })
        #expect(stored.contains { $0.subject.hasSuffix(".cam.null.result") } && stored.contains { $0.subject.hasSuffix(".session.started") })
    }

    @Test("a spool's memory queue that fills (queue=10, 5,000 results as fast as they come): no trap (LineQueue overflowed), none dropped (the writer moves a full queue into the spool), every line delivered")
    func queueFills() throws {
        let b = try MQTTSpooled()
        let spool = TestFolders.make("spool-fill") + "/spool"
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=10,backpressure=block", "--input", "cam=testsrc:64x48:unpaced", "--max-frames", "500",
                                      "--metrics-interval", "0", "--output", b.url(query: "spool=\(spool)&queue=10&drain=60"), "--output", "-"],
                                     timeout: 180)
        let written = r.lines.filter { !$0.contains("\"event\":\"output.") }
        let output = try #require(MQTTOutputTests.finalOutput(r, named: "mqtt://"), "exit \(r.exitCode): \(r.stderr.suffix(2000))")
        let dropped = (output["dropped"] as? [String: Int])?.values.reduce(0, +) ?? -1
        // With a spool none is dropped for want of room: a writer that finds the queue full moves it into the spool.
        #expect(r.exitCode == 0 && dropped == 0, "exit \(r.exitCode), \(dropped) dropped: \(r.stderr.suffix(2000))")
        let got = Set(try b.received(atLeast: Set(written).count - dropped))
        #expect(got.count + dropped >= Set(written).count && got.isSubset(of: Set(written)), "\(got.count) received, \(dropped) dropped, \(written.count) written: \(output)")
    }

    @Test("MQTT (mosquitto) with a spool: 20,000 results through two outages and a kill arrive, in order per topic")
    func mqtt() throws {
        try Self.survives(try MQTTSpooled())
    }

    @Test("a Kafka cluster away when cvhost starts: tried again while the lines wait in the spool, every one delivered once it is back")
    func kafkaAwayAtStart() throws {
        let b = try KafkaSpooled()
        try b.down()
        let spool = TestFolders.make("spool-kafka-start") + "/spool"
        // 10 s of input: the cluster is away for the first 7 (its news reach stdout while the run goes on).
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1,backpressure=block", "--input", "testsrc:64x48@30", "--max-frames", "300",
                                      "--metrics-interval", "0", "--output", b.url(query: "spool=\(spool)&drain=60"), "--output", "-"],
                                     timeout: 120, withStdin: false) { running in
            // Once a try has failed (the producer waits 5 s for the topic's leaders, then is made anew).
            _ = running.waitForStderr("cannot connect")
            try? b.up()
        }
        #expect(r.exitCode == 0, "\(r.stderr.suffix(1000))")
        #expect(r.stderr.contains("cannot connect") && !r.events("output.disconnected").isEmpty && !r.events("output.connected").isEmpty,
                "\(r.stderr.suffix(1000))")
        let written = r.lines.filter { !$0.contains("\"event\":\"output.") }
        let got = try b.received(atLeast: Set(written).count)
        #expect(Set(written).subtracting(got).isEmpty, "\(Set(written).subtracting(got).count) of \(written.count) lines did not arrive")
    }

    @Test("a NATS stream that cannot be made (its subjects are another stream's): required=true is exit 5 saying why")
    func natsStreamRefused() throws {
        let server = try NATSServer()
        let base = ["run", "--plugin", "null:results=1", "--input", "testsrc:64x48", "--max-frames", "1", "--metrics-interval", "0"]
        let first = try CVHostBinary.run(base + ["--output", "nats://127.0.0.1:\(server.port)/x?stream=A"])
        #expect(first.exitCode == 0 && first.stderr.contains("made the JetStream stream A for x.>"), "\(first.stderr)")
        let second = try CVHostBinary.run(base + ["--output", "nats://127.0.0.1:\(server.port)/x?stream=B&required=true", "--open-timeout", "5"])
        #expect(second.exitCode == 5 && second.stderr.contains("cannot make the stream B for x.>: another stream of the server takes those subjects")
                && second.stderr.contains("stream=NAME"), "\(second.exitCode): \(second.stderr)")
        // The default stream's name, taken by a stream of other subjects: said, with the fix.
        let third = try CVHostBinary.run(base + ["--output", "nats://127.0.0.1:\(server.port)/y?stream=A&required=true", "--open-timeout", "5"])
        #expect(third.exitCode == 5 && third.stderr.contains("the server's stream A takes x.>, not y.>: name another stream with stream=NAME"),
                "\(third.exitCode): \(third.stderr)")
    }

    @Test("/metrics of a broker output with a spool: delivered, spooled, resent, failed, the delivery latency (promtool checks it)")
    func metrics() throws {
        let server = try NATSServer()
        let port = freeLoopbackPort()
        let spool = TestFolders.make("spool-metrics") + "/spool"
        var scraped = ""
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=5", "--input", "testsrc:64x48@30", "--max-frames", "30", "--metrics-interval", "0",
                                      "--output", "nats://127.0.0.1:\(server.port)/cvhost?spool=\(spool)", "--output", "-",
                                      "--http", "127.0.0.1:\(port)"],
                                     timeout: 60, withStdin: false) { run in
            guard run.wait(until: { $0.contains("\"event\":\"session.stopped\"") }) else { return }
            // The lines of the run are acknowledged by now (a loopback server), the final ones perhaps not yet.
            usleep(500_000)
            scraped = (try? LiveViewTests.http(port, "/metrics").body) ?? ""
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        let file = TestFolders.make("metrics") + "/metrics.txt"
        try scraped.write(toFile: file, atomically: true, encoding: .utf8)
        let promtool = try Tool.run("/bin/sh", ["-c", "promtool check metrics < '\(file)'"])
        #expect(promtool.status == 0, "promtool: \(promtool.output)")
        let l = ["output": "nats://127.0.0.1:\(server.port)/cvhost"]
        #expect((LiveViewTests.sample(scraped, "cvhost_output_lines_delivered_total", l) ?? 0) >= 150, "\(scraped)")
        #expect(LiveViewTests.sample(scraped, "cvhost_output_lines_spooled", l) != nil)
        #expect(LiveViewTests.sample(scraped, "cvhost_output_lines_resent_total", l) == 0)
        #expect(LiveViewTests.sample(scraped, "cvhost_output_deliveries_failed_total", l) == 0)
        #expect(LiveViewTests.sample(scraped, "cvhost_output_connected", l) == 1)
        #expect((LiveViewTests.sample(scraped, "cvhost_output_delivery_latency_seconds_count", l) ?? 0) >= 150)
        #expect(LiveViewTests.sample(scraped, "cvhost_output_lines_dropped_total", l.merging(["reason": "spool_full"]) { $1 }) == 0)
    }

    @Test("a full spool: the newest lines are counted as spool_full and said, exit 4; what it holds is kept")
    func fullSpool() throws {
        let spool = TestFolders.make("spool-full") + "/spool"
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=10", "--input", "testsrc:64x48:unpaced", "--max-frames", "1000",
                                      "--output", "nats://127.0.0.1:\(freeLoopbackPort())/x?spool=\(spool)&spool_mb=1&drain=0", "--output", "-"],
                                     timeout: 120)
        #expect(r.exitCode == 4, "\(r.stderr)")
        #expect(r.stderr.contains("the spool \(spool) is full (1 MB)"), "\(r.stderr)")
        // What waits for the next run is said, with where.
        #expect(r.stderr.contains("lines wait in the spool \(spool) for nats://"), "\(r.stderr)")
        let output = try #require(MQTTOutputTests.finalOutput(r, named: "nats://"))
        let dropped = try #require(output["dropped"] as? [String: Int])
        #expect((dropped["spool_full"] ?? 0) > 0 && dropped["unsent"] == 0 && (output["spooled"] as? Int ?? 0) > 1000, "\(output)")
        let bytes = try FileManager.default.contentsOfDirectory(atPath: spool).filter { $0.hasSuffix(".spool") }
            .reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: spool + "/" + $1)[.size] as? Int) ?? 0) }
        #expect(bytes > 500_000 && bytes <= 1_048_576)
    }

    @Test("the disk under the spool full while the broker is up: lines go from memory, counted as unspooled and said once; none lost, exit 0",
          .enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func spoolDiskFull() throws {
        let disk = TestFolders.make("spool-disk")
        try Tool.check("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", disk])
        defer { _ = try? Tool.run("umount", ["-l", disk]) }
        let broker = try NATSSpooled()
        let spool = disk + "/spool"
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=10", "--input", "testsrc:64x48@500", "--max-frames", "300",
                                      "--output", broker.url(query: "spool=\(spool)&drain=30"), "--output", "-"], timeout: 120)
        #expect(r.exitCode == 0, "\(r.stderr.suffix(2000))")
        #expect(Self.count(r.stderr, "refused lines (No space left on device): they are sent from memory") == 1, "\(r.stderr.suffix(2000))")
        let output = try #require(MQTTOutputTests.finalOutput(r, named: "nats://"))
        #expect((output["unspooled"] as? Int ?? 0) > 0 && (output["dropped"] as? [String: Int])?.values.allSatisfy { $0 == 0 } == true, "\(output)")
        let written = r.lines.filter { !$0.contains("\"event\":\"output.") }
        let got = try broker.received(atLeast: Set(written).count)
        #expect(Set(written).subtracting(got).isEmpty, "\(Set(written).subtracting(got).count) of \(written.count) lines did not arrive")
    }

    @Test("Kafka refuses lines for good (too large, then not authorised): each reason said once, those lines counted as rejected, never sent again; the rest delivered")
    func kafkaRefusals() throws {
        let cluster = try KafkaCluster(topic: "results")
        // MESSAGE_TOO_LARGE (10) for the first produce requests; later TOPIC_AUTHORIZATION_FAILED (29),
        // which librdkafka then keeps for the topic: every later line is refused at once.
        try cluster.command("produce-errors 2 10")
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1,backpressure=block", "--input", "testsrc:64x48@100", "--max-frames", "200",
                                      "--metrics-interval", "0", "--output", "kafka://\(cluster.bootstrap)/results?drain=30", "--output", "-"], timeout: 120,
                                     withStdin: false) { running in
            _ = running.wait(timeout: 30) { $0.components(separatedBy: Self.result).count > 100 }
            try? cluster.command("produce-errors 2 29")
        }
        #expect(r.exitCode == 4, "lines were lost: \(r.stderr.suffix(1500))")
        #expect(Self.count(r.stderr, "Topic authorization failed") == 1, "\(r.stderr.suffix(1500))")
        #expect(Self.count(r.stderr, "Message size too large") == 1, "\(r.stderr.suffix(1500))")
        let output = try #require(MQTTOutputTests.finalOutput(r, named: "kafka://"))
        let dropped = try #require(output["dropped"] as? [String: Int])
        let rejected = dropped["rejected"] ?? 0
        let delivered = output["delivered"] as? Int ?? 0
        #expect(rejected > 0 && dropped["unsent"] == 0, "\(output)")
        // Every line either delivered or rejected: none sent again and again, none left.
        let written = r.lines.filter { !$0.contains("\"event\":\"output.") && !$0.contains("\"event\":\"metrics\"") }.count
        #expect(delivered + rejected >= written - 2 && delivered > 0, "\(delivered) + \(rejected) of \(written): \(output)")

        // required=true: the first line refused for good ends the run, exit 5, saying which output and why.
        try cluster.command("produce-errors 3 29")
        let required = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "testsrc:64x48@30", "--metrics-interval", "0",
                                             "--output", "kafka://\(cluster.bootstrap)/results?required=true&drain=5", "--output", "-"], timeout: 60)
        #expect(required.exitCode == 5 && required.stderr.contains("refused a line for good (Broker: Topic authorization failed): the output is required=true"),
                "\(required.exitCode): \(required.stderr.suffix(1500))")
        #expect(required.events("session.stopped").first?["reason"] as? String == "output_failed")
        #expect(try CVHostBinary.schemaProblems(required.stdout) == nil)
    }

    @Test("required=true and a broker that never answers: exit 5 naming the output, for each broker; no password shown")
    func requiredSilent() throws {
        let silent = try TestServer("silent_server.py", [])
        for url in ["kafka://user:hunter2@127.0.0.1:\(silent.port)/t?required=true", "nats://user:hunter2@127.0.0.1:\(silent.port)/x?required=true",
                    "mqtt://user:hunter2@127.0.0.1:\(silent.port)/x?required=true"] {
            let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc:64x48", "--duration", "30", "--open-timeout", "2",
                                          "--output", url], timeout: 60)
            let name = url.hasPrefix("kafka") ? "kafka://user:***@127.0.0.1:\(silent.port)/t" : url.prefix(4) + "://user:***@127.0.0.1:\(silent.port)/x"
            #expect(r.exitCode == 5 && r.stderr.contains("cannot connect to \(name)"), "\(url): \(r.exitCode) \(r.stderr)")
            #expect(!r.stderr.contains("hunter2") && !r.stdout.contains("hunter2"))
        }
    }
}
