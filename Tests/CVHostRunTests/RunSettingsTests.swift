import CVHostRun
import CVHostTestSupport
import Foundation
import Testing

/// Every setting of `cvhost run` that cannot be run is refused before anything opens, naming its
/// option (the CLI's exit 64).
@Suite("RunSettings")
struct RunSettingsTests {
    /// The UsageError's message, or what else happened.
    static func refusal(_ make: () throws -> Any?) -> String {
        do { _ = try make(); return "accepted" } catch let error as UsageError { return error.description } catch { return "\(error)" }
    }

    @Test("defaults: the first camera, stdout, queue depth 2, in process, metrics every 5 s")
    func defaults() throws {
        let s = try RunSettings(plugins: ["null"], environment: [:])
        #expect(s.inputs.map(\.kind) == [.firstCamera])
        #expect(s.outputs == [.stdout])
        #expect(s.queueDepth == 2 && s.isolation == .none && s.metricsInterval == 5 && s.backpressure == nil)
        #expect(s.liveView == nil)
    }

    @Test("inputs and devices keep their order (inputs first) and names; each is a source id")
    func inputs() throws {
        let s = try RunSettings(plugins: ["null"], inputs: ["gate=rtsp://u:secret@h/p", "clip.mp4"], devices: ["/dev/video2"], environment: [:])
        #expect(s.inputs.map { $0.sourceID() } == ["gate", "clip.mp4", "/dev/video2"])
        #expect(try RunSettings(plugins: ["null"], inputs: ["rtsp://u:secret@h/p"], environment: [:]).inputs[0].sourceID() == "rtsp://u:***@h/p")
    }

    @Test("each refusal names its option")
    func refusals() {
        let cases: [(() throws -> RunSettings, String)] = [
        ({ try RunSettings(plugins: [], inputs: ["a.mp4"]) }, "give at least one --plugin"),
        ({ try RunSettings(plugins: ["null"], inputs: ["a.mp4"], format: "640x480") }, "--format, --pixel-format and --control apply to cameras"),
        ({ try RunSettings(plugins: ["null"], inputs: ["a.mp4"], reconnect: true) }, "--reconnect applies to cameras and network streams"),
        ({ try RunSettings(plugins: ["null"], inputs: ["rtsp://h/p"], rtspTransport: "sctp") }, "--rtsp-transport takes tcp or udp, not sctp"),
        ({ try RunSettings(plugins: ["null"], inputs: ["a.mp4"], openTimeout: 0) }, "--open-timeout must be more than 0"),
        ({ try RunSettings(plugins: ["null"], inputs: ["a.mp4"], openTimeout: .infinity) }, "--open-timeout must be more than 0"),
        ({ try RunSettings(plugins: ["null"], devices: ["/dev/video0"], controls: ["brightness"]) }, "--control brightness: write NAME=VALUE"),
        ({ try RunSettings(plugins: ["null"], devices: ["/dev/video0"], controls: ["brightnes=1"]) }, "unknown control 'brightnes'"),
        ({ try RunSettings(plugins: ["null"], inputs: ["a.mp4"], queueDepth: 0) }, "--queue-depth must be from 1 to 1000"),
        ({ try RunSettings(plugins: ["null"], inputs: ["a.mp4"], metricsInterval: -1) }, "--metrics-interval must be 0 or more"),
        ({ try RunSettings(plugins: ["null"], inputs: ["a.mp4"], duration: 2e9) }, "--duration must be more than 0 seconds, and at most 1e9"),
        ({ try RunSettings(plugins: ["null"], inputs: ["a.mp4"], maxFrames: 0) }, "--max-frames must be at least 1"),
        ({ try RunSettings(plugins: ["null"], inputs: ["a.mp4"], outputs: ["ftp://x"]) }, "ftp://x"),
        ({ try RunSettings(plugins: ["null"], inputs: ["a.mp4", "a.mp4"]) }, "two inputs are called 'a.mp4'"),
        ({ try RunSettings(plugins: ["null"], inputs: ["-", "x=-"]) }, "standard input (-) can be read by one --input only"),
        ({ try RunSettings(plugins: ["null"], inputs: ["gate="]) }, "--input gate=: give what to read after the name"),
        ]
        for (make, expected) in cases {
            let message = Self.refusal(make)
            #expect(message.contains(expected), "\(expected): \(message)")
        }
    }

    @Test("an MQTT user without a password takes it from CVHOST_MQTT_PASSWORD, given as the environment")
    func mqttPasswordFromEnvironment() throws {
        let s = try RunSettings(plugins: ["null"], inputs: ["a.mp4"], outputs: ["mqtt://cam@broker/x"], environment: ["CVHOST_MQTT_PASSWORD": "pw"])
        guard case .mqtt(let mqtt) = try #require(s.outputs.first) else { Issue.record("not mqtt: \(s.outputs)"); return }
        #expect(mqtt.password == "pw")
    }

    @Test("--http: loopback by default, a port of 0, an address; refusals name the option")
    func liveView() throws {
        let local = try #require(try LiveViewSettings(http: "8080", environment: [:]))
        #expect(local.host == "127.0.0.1" && local.port == 8080 && local.token == nil)
        let v6 = try #require(try LiveViewSettings(http: "[::1]:0", environment: [:]))
        #expect(v6.host == "::1" && v6.port == 0)
        #expect(try LiveViewSettings(http: nil, environment: [:]) == nil)
        #expect(try LiveViewSettings(http: "8080", environment: ["CVHOST_HTTP_TOKEN": "t"])?.token == "t")

        let empty = RunSettingsTests.folderFile("empty-token", "\n")
        let cases: [(() throws -> LiveViewSettings?, String)] = [
            ({ try LiveViewSettings(http: "99999", environment: [:]) }, "--http 99999: give a port"),
            ({ try LiveViewSettings(http: nil, linger: 3, environment: [:]) }, "go with --http"),
            ({ try LiveViewSettings(http: "8080", tokenFile: empty, environment: [:]) }, "is empty"),
            ({ try LiveViewSettings(http: "8080", tokenFile: "/nonexistent/t", environment: [:]) }, "cannot read it"),
            ({ try LiveViewSettings(http: "0.0.0.0:8080", environment: [:]) }, "give a token"),
            ({ try LiveViewSettings(http: "8080", allowHosts: ["http://x"], environment: [:]) }, "--http-allow-host 'http://x'"),
            ({ try LiveViewSettings(http: "8080", previewFPS: 0, environment: [:]) }, "--preview-fps"),
            ({ try LiveViewSettings(http: "8080", previewWidth: 8, environment: [:]) }, "--preview-width"),
            ({ try LiveViewSettings(http: "8080", linger: -1, environment: [:]) }, "--http-linger"),
            ({ try LiveViewSettings(http: nil, publicURL: "http://x", environment: [:]) }, "go with --http"),
        ]
        for bad in ["cam-host.lan:8080", "ftp://cam-host.lan", "http://", "http://user:pw@cam-host.lan", "http://cam-host.lan/?a=1",
                    "http://cam-host.lan/#top", "http:///path"] {
            let message = Self.refusal { try LiveViewSettings(http: "8080", publicURL: bad, environment: [:]) }
            #expect(message.hasPrefix("--http-public-url: give the address other machines open") && !message.contains("pw"), "\(bad): \(message)")
        }
        for (make, expected) in cases {
            let message = Self.refusal(make)
            #expect(message.contains(expected), "\(expected): \(message)")
        }
    }

    @Test("--http-public-url: kept without its trailing /, its host answered besides the --http-allow-host names")
    func publicURL() throws {
        let v = try #require(try LiveViewSettings(http: "8080", allowHosts: ["proxy.lan"], publicURL: "https://Example.org/cvhost/", environment: [:]))
        #expect(v.publicURL == "https://Example.org/cvhost" && v.allowHosts == ["proxy.lan"] && v.answeredHosts == ["proxy.lan", "example.org"])
        let v6 = try #require(try LiveViewSettings(http: "8080", publicURL: "http://[fd00::5]:8080", environment: [:]))
        #expect(v6.answeredHosts == ["fd00::5"] && v6.publicURL == "http://[fd00::5]:8080")
        #expect(try LiveViewSettings(http: "8080", environment: [:])?.publicURL == nil)
    }

    static func folderFile(_ name: String, _ text: String) -> String {
        let path = TestFolders.make("run-settings") + "/" + name
        try? text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
