import CVHostEvidence
import CVHostMotion
import CVHostOutput
import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostRun

/// The table of `cvhost run`'s options: every one a reload either applies or says takes a restart.
@Suite("RunOptions: every option declared once")
struct RunOptionsTests {
    static let folder = TestFolders.make("run-options")

    /// For each option a reload cannot change: the settings changed in it alone.
    static func changes() throws -> [String: (inout RunSettings) throws -> Void] {
        let token = folder + "/token"
        try "a-token-of-the-right-length-0123456789".write(toFile: token, atomically: true, encoding: .utf8)
        chmod(token, 0o600)
        func view(_ make: @escaping () throws -> LiveViewSettings?) -> (inout RunSettings) throws -> Void { { $0.liveView = try make() } }
        return [
            "plugin": { $0.plugins = ["null", "motion"] },
            "output": { $0.outputs = [.stdout, try OutputDestination(parsing: "file:" + folder + "/out.jsonl")] },
            "snapshots": { $0.snapshots = try EvidenceSettings(parsing: folder + "/snaps", kind: .snapshots) },
            "clips": { $0.clips = try EvidenceSettings(parsing: folder + "/clips", kind: .clips) },
            "events-db": { $0.eventsDatabase = folder + "/events.sqlite" },
            "state": { $0.keep(try RunStateFile(path: folder + "/state.json"), inputPlugins: [:]) },
            "reset-counts-at": { $0.resetCountsAt = try DailyTime("06:00") },
            "motion": { $0.motion = try MotionSettings(parsing: "threshold=20") },
            "max-inputs": { try $0.limitInputs(to: 9) },
            "queue-depth": { $0.queueDepth = 5 },
            "backpressure": { $0.backpressure = .block },
            "isolation": { $0.isolation = .process },
            "format": { $0.format = "640x480" },
            "pixel-format": { $0.pixelFormat = "nv12" },
            "control": { $0.controls = ["brightness=1"] },
            "reconnect": { $0.reconnect = true },
            "rtsp-transport": { $0.rtspTransport = "udp" },
            "open-timeout": { $0.openTimeout = 3 },
            "max-image-pixels": { $0.maxImagePixels = 5 },
            "max-frames": { $0.maxFrames = 9 },
            "duration": { $0.duration = 9 },
            "oneshot": { $0.oneshot = true },
            "metrics-interval": { $0.metricsInterval = 1 },
            "results-only": { $0.stdoutSelection = .results },
            "events": { $0.stdoutSelection = .events },
            "field": { $0.stdoutSelection = .field("text") },
            "stdin-commands": { $0.stdinCommands = false },
            "verbose": { $0.verbose = true },
            "quiet": { $0.quiet = true },
            "http": view { try LiveViewSettings(http: "127.0.0.1:9090", environment: [:]) },
            "http-token-file": view { try LiveViewSettings(http: "127.0.0.1:8080", tokenFile: token, environment: [:]) },
            "http-allow-host": view { try LiveViewSettings(http: "127.0.0.1:8080", allowHosts: ["cam.example"], environment: [:]) },
            "http-linger": view { try LiveViewSettings(http: "127.0.0.1:8080", linger: 5, environment: [:]) },
            "http-public-url": view { try LiveViewSettings(http: "127.0.0.1:8080", publicURL: "http://cam-host.lan:8080", environment: [:]) },
            "preview-fps": view { try LiveViewSettings(http: "127.0.0.1:8080", previewFPS: 2, environment: [:]) },
            "preview-width": view { try LiveViewSettings(http: "127.0.0.1:8080", previewWidth: 320, environment: [:]) },
            "allow-inputs": view { try LiveViewSettings(http: "127.0.0.1:8080", allowInputs: "all", environment: [:]) },
            "fleet": { $0.fleet = "nats://127.0.0.1/depot" },
            "node": { $0.node = "gate-1" },
        ]
    }

    static func base() throws -> RunSettings {
        try RunSettings(plugins: ["null"], devices: ["/dev/video0"], liveView: LiveViewSettings(http: "127.0.0.1:8080", environment: [:]), environment: [:])
    }

    @Test("every option a reload does not apply is said to take a restart when it alone changed, by its name")
    func everyOptionReported() throws {
        let base = try Self.base(), changes = try Self.changes()
        for option in RunOptions.all where option.takesRestart {
            guard let change = changes[option.name] else {
                Issue.record("no change of \(option.name) here: add one (and see that a reload reports it)")
                continue
            }
            var changed = base
            try change(&changed)
            #expect(RunOptions.needingRestart(changed, base) == [option.name], "\(option.name)")
        }
        #expect(RunOptions.needingRestart(base, base).isEmpty)
    }

    @Test("what a reload applies (inputs, tracks, zones, lines, filters, masks) is not reported; every name is unique and a config key")
    func appliedAndKeys() throws {
        let applied = RunOptions.all.filter { !$0.takesRestart }.map(\.name)
        #expect(applied == ["input", "device", "track", "zone", "line", "filter", "mask"])
        var changed = try Self.base()
        changed.inputs = try InputSpec.parse(inputs: ["door=rtsp://cam/1"], devices: ["/dev/video2"])
        changed.analytics = try AnalyticsSettings(track: ["null"], zones: ["bay=0,0 1,0 1,1"], lines: ["gate=0,0 1,1"],
                                                  filters: ["person:min_score=0.5"], masks: ["tree=0,0 1,0 1,1"])
        #expect(RunOptions.needingRestart(changed, try Self.base()).isEmpty)
        #expect(Set(RunOptions.all.map(\.name)).count == RunOptions.all.count)
        #expect(RunConfigFile.keys.count == RunOptions.all.count)
    }

    @Test("docs/running.md's table of options is the table's: every option, its value's kind, what a reload does")
    func guideTable() throws {
        let text = try String(contentsOfFile: PluginFixtures.packageRoot + "/docs/running.md", encoding: .utf8)
        let rows = text.split(separator: "\n").filter { $0.hasPrefix("| `") && $0.contains("| a reload") == false }
            .filter { $0.contains("applies it |") || $0.contains("takes a restart") }
        let kinds: [RunConfigFile.Kind: String] = [.list: "a list", .string: "text", .number: "a number", .integer: "a whole number",
                                                   .flag: "true/false", .invertedFlag: "true/false"]
        let expected = RunOptions.all.map { o in
            "| `\(o.name)` | \(kinds[o.kind]!) | \(o.takesRestart ? "takes a restart (said on stderr)" : "applies it") |"
        }
        #expect(rows.map(String.init) == expected, "docs/running.md's rows: \(rows.count), the table's: \(expected.count)")
    }
}
