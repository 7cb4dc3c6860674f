import Testing
@testable import CVHostLines
@testable import CVHostOutput

/// Names from outside made into MQTT topic levels, NATS subject tokens and Prometheus label
/// values scalar by scalar: a reserved character followed by a combining mark is one Character,
/// and was let through when names were made Character by Character.
@Suite("Brokers and /metrics: names from outside")
struct ProtocolNamePartTests {
    @Test("MQTT levels: wildcards and separators with a combining mark, controls, empty, too long")
    func mqttLevels() {
        #expect(MQTTTopics.level("+\u{301}") == "_\u{301}")
        #expect(MQTTTopics.level("#\u{301}/x") == "_\u{301}_x")
        #expect(MQTTTopics.level("a\tb\u{1b}[31m\u{85}") == "a_b_[31m_")
        #expect(MQTTTopics.level("") == "_" && MQTTTopics.level(nil) == "_")
        let long = MQTTTopics.level(String(repeating: "é", count: 300))
        #expect(long.utf8.count == 200 && long.unicodeScalars.allSatisfy { $0 == "é" })
    }

    @Test("NATS tokens: a dot with a combining mark is no token separator any more; white space and controls are `_`")
    func natsTokens() {
        #expect(NATSSubjects.token(".\u{301}") == "_\u{301}")
        #expect(NATSSubjects.token("a b\u{a0}c*>\r\n") == "a_b_c____")
        var subjects = NATSSubjects(prefix: "cvhost", host: "h")
        #expect(subjects.subject(for: .init(event: "result", source: "cam.\u{301}0", plugin: "p")) == "cvhost.h.cam_\u{301}0.p.result")
    }

    @Test("Prometheus label values: quote, backslash and newline escaped even with a combining mark after them; other controls dropped")
    func labelValues() {
        #expect(PrometheusExposition.escapeLabel("\"\u{301}") == "\\\"\u{301}")
        #expect(PrometheusExposition.escapeLabel("a\r\nfake_metric 7") == "a\\nfake_metric 7")
        #expect(PrometheusExposition.escapeLabel("\\\u{301}\u{1b}[0m") == "\\\\\u{301}[0m")
        #expect(PrometheusExposition.escapeHelp("q\"\n") == "q\"\\n")
    }
}
