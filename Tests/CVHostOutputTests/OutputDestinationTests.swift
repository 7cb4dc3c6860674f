import CVHostCore
import Testing
import CVHostLines
@testable import CVHostOutput

@Suite("--output values")
struct OutputDestinationTests {
    func mqtt(_ text: String, password: String? = nil) throws -> OutputDestination.MQTTSettings {
        guard case .mqtt(let m) = try OutputDestination(parsing: text, environment: password.map { ["CVHOST_MQTT_PASSWORD": $0] } ?? [:]) else {
            Issue.record("\(text) is not mqtt")
            return .init()
        }
        return m
    }

    @Test("an MQTT URL: user, password (percent-decoded), host, port, prefix, options; its name hides the password")
    func mqttURL() throws {
        let m = try mqtt("mqtt://cam%40gate:p%3Ass@broker.local:1884/site/a/cvhost/?qos=0&queue=500&required=true&drain=3")
        #expect(m.user == "cam@gate" && m.password == "p:ss" && m.host == "broker.local" && m.port == 1884)
        #expect(m.prefix == "site/a/cvhost" && m.qos == 0 && m.queue.capacity == 500 && m.queue.required && m.queue.drainSeconds == 3)
        let d = try OutputDestination(parsing: "mqtt://cam:secret@broker.local/x")
        #expect(d.name == "mqtt://cam:***@broker.local:1883/x")
        let tls = try mqtt("mqtts://[::1]/cvhost?ca=/etc/ca.pem")
        #expect(tls.tls && tls.host == "::1" && tls.port == 8883 && tls.caFile == "/etc/ca.pem" && tls.prefix == "cvhost")
        #expect(OutputDestination.mqtt(tls).name == "mqtts://[::1]:8883/cvhost")
        // A user without a password takes the one from the environment.
        #expect(try mqtt("mqtt://cam@broker", password: "env").password == "env")
        #expect(try mqtt("mqtt://broker").prefix == "cvhost")
        // A password with an unescaped '/' (or '@', '?') stays a password: no part of it becomes the topic prefix.
        let slash = try mqtt("mqtt://bus:Zq/9Sec@ret@broker:1884/site")
        #expect(slash.user == "bus" && slash.password == "Zq/9Sec@ret" && slash.host == "broker" && slash.port == 1884 && slash.prefix == "site")
        #expect(OutputDestination.mqtt(slash).name == "mqtt://bus:***@broker:1884/site")
        // A port, then an '@' in the prefix: the prefix as written.
        let port = try mqtt("mqtt://broker:1884/site@1")
        #expect(port.host == "broker" && port.port == 1884 && port.prefix == "site@1" && port.user == nil)
    }

    @Test("a Kafka URL: brokers, topic, SASL user and password, options; a NATS URL: subject, stream, token; names hide secrets")
    func brokerURLs() throws {
        guard case .kafka(let k) = try OutputDestination(parsing: "kafka://cam:s3cret@k1:9093,[::1],k3/site.results?compression=zstd&tls=true&ca=/ca.pem&sasl=scram-sha-512&spool=/var/spool/k&spool_mb=64&required=true") else {
            Issue.record("not kafka")
            return
        }
        #expect(k.brokers == ["k1:9093", "[::1]:9092", "k3:9092"] && k.topic == "site.results" && k.user == "cam" && k.password == "s3cret")
        #expect(k.compression == "zstd" && k.tls && k.caFile == "/ca.pem" && k.sasl == "SCRAM-SHA-512" && k.queue.required)
        #expect(k.queue.spool == OutputDestination.SpoolSettings(folder: "/var/spool/k", maxBytes: 64 * 1_048_576))
        #expect(OutputDestination.kafka(k).name == "kafka://cam:***@k1:9093,[::1]:9092,k3:9092/site.results")
        // A user alone: SASL PLAIN, the password from the environment.
        guard case .kafka(let plain) = try OutputDestination(parsing: "kafka://cam@k1/t", environment: ["CVHOST_KAFKA_PASSWORD": "env"]) else { return }
        #expect(plain.sasl == "PLAIN" && plain.password == "env" && plain.queue.spool == nil)
        guard case .nats(let n) = try OutputDestination(parsing: "nats://nats.local/site-a.cvhost?stream=RESULTS&spool=/s") else {
            Issue.record("not nats")
            return
        }
        #expect(n.host == "nats.local" && n.port == 4222 && n.subject == "site-a.cvhost" && n.stream == "RESULTS" && n.queue.spool?.folder == "/s")
        #expect(n.queue.spool?.maxBytes == OutputDestination.SpoolSettings.defaultBytes)
        guard case .nats(let t) = try OutputDestination(parsing: "nats://127.0.0.1:4223", environment: ["CVHOST_NATS_TOKEN": "tok"]) else { return }
        #expect(t.token == "tok" && t.subject == "cvhost" && t.stream == "CVHOST" && OutputDestination.nats(t).name == "nats://127.0.0.1:4223/cvhost")
        #expect(try OutputDestination(parsing: "nats://u:pw@h/x").name == "nats://u:***@h:4222/x")
        // A user alone is a token (as NATS's clients read it), never shown.
        guard case .nats(let k) = try OutputDestination(parsing: "nats://s3cr3tTOKEN@h/x") else { return }
        #expect(k.token == "s3cr3tTOKEN" && k.user == nil && !OutputDestination.nats(k).name.contains("s3cr3t"))
        #expect(PasswordRedaction.redact("cannot reach nats://s3cr3tTOKEN@h:4222/x") == "cannot reach nats://***@h:4222/x")
        #expect(PasswordRedaction.redact("mqtt://user@h/x") == "mqtt://user@h/x")
    }

    @Test("a file, with rotation options; -, stdout")
    func fileAndStdout() throws {
        #expect(try OutputDestination(parsing: "-") == .stdout && OutputDestination(parsing: "stdout") == .stdout)
        guard case .file(let f) = try OutputDestination(parsing: "file:/var/log/r.jsonl?max_mb=5&keep=3&queue=10") else {
            Issue.record("not a file")
            return
        }
        #expect(f.path == "/var/log/r.jsonl" && f.maxBytes == 5 * 1_048_576 && f.keep == 3 && f.queue.capacity == 10)
        // Options that do nothing for a file are refused, not taken silently.
        for option in ["required=true", "spool=/s"] {
            #expect { _ = try OutputDestination(parsing: "file:/r.jsonl?" + option) } throws: {
                "\($0)".contains("is for broker outputs (a file that cannot be opened already stops the run, exit 5)")
            }
        }
    }

    @Test("refusals name the value and never show a password", arguments: [
        "mqtt://u:topsecret@h:0/x", "mqtt://u:topsecret@/x", "mqtts://u:topsecret@h/x?qos=9", "mqtt://u:topsecret@h/a/#",
        "mqt://u:topsecret@h/x", "file:x?keep=0", "mqtt://:topsecret@h/x", "kafka://u:topsecret@h", "kafka://u:topsecret@h/t?sasl=md5",
        "nats://u:topsecret@h/a..b", "nats://u:topsecret@a,b/x", "mqtt://u:topsecret@h/x?spool_mb=1", "kafka://u:topsecret@h/bad topic",
    ])
    func refusals(_ text: String) {
        do {
            _ = try OutputDestination(parsing: text)
            Issue.record("\(text) was taken")
        } catch {
            #expect(!error.description.contains("topsecret") && error.description.hasPrefix("--output"), "\(error.description)")
        }
    }
}

@Suite("A sink's line queue and topics")
struct LineQueueTests {
    func line(_ n: Int) -> OutputLine {
        OutputLine(bytes: Array("\(n)\n".utf8), route: .init(event: "result", source: "cam0", plugin: "barcode"))
    }

    @Test("full: the oldest lines make room and are counted; makeRoom drops before, so writing then drops none")
    func dropOldest() {
        let q = LineQueue(capacity: 3)
        for n in 0..<5 { q.push(line(n)) }
        #expect(q.droppedFull == 2 && q.count == 3)
        q.makeRoom(for: 2)
        #expect(q.droppedFull == 4 && q.count == 1)
        q.push(line(5))
        q.push(line(6))
        #expect(q.droppedFull == 4)
        #expect(q.popFront(max: 10).map { String(decoding: $0.bytes, as: UTF8.self) } == ["4\n", "5\n", "6\n"])
        #expect(q.count == 0)
    }

    @Test("everything taken (max: Int.max) after the oldest lines were dropped: no overflow (a spool's queue that filled trapped)")
    func popAllAfterDrops() {
        let q = LineQueue(capacity: 10)
        for n in 0..<25 { q.push(line(n)) }
        #expect(q.droppedFull == 15)
        #expect(q.popFront(max: Int.max).map { String(decoding: $0.bytes, as: UTF8.self) } == (15..<25).map { "\($0)\n" })
        q.push(line(25))
        #expect(q.popFront(max: Int.max).count == 1)
        #expect(q.popFront(max: Int.max).isEmpty && q.popFront(max: 0).isEmpty)
    }

    @Test("topic levels: _ for none, / + # replaced")
    func topics() {
        var t = MQTTTopics(prefix: "cvhost", host: "gate/1")
        #expect(t.topic(for: .init(event: "result", source: "clips/a+b#.mp4", plugin: "barcode")) == "cvhost/gate_1/clips_a_b_.mp4/barcode/result")
        #expect(t.topic(for: .init(event: "session.started", source: "cam0", plugin: nil)) == "cvhost/gate_1/cam0/_/session.started")
        #expect(t.status == "cvhost/gate_1/status")
    }
}
