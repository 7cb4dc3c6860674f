import CVHostTestSupport
import Foundation
import Testing

/// `cvhost run --config FILE`: a YAML file holding what the command line holds; the command line
/// overrides it; every error names the file, the line and the key.
@Suite("cvhost run --config")
struct ConfigFileTests {
    static let folder = TestFolders.make("config")

    static func write(_ name: String, _ text: String) throws -> String {
        let path = folder + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("a config file runs what the same command line runs: inputs, plugins with options (a comma in a value), outputs, limits")
    func sameAsCommandLine() throws {
        let video = BarcodeFixtures.demoVideo
        let results = ConfigFileTests.folder + "/results.jsonl"
        try? FileManager.default.removeItem(atPath: results)
        let config = try ConfigFileTests.write("demo.yaml", """
            # the demo video, read twice under two names
            input:
              - a=\(video)
              - b=\(video)
            plugin:
              - name: barcode
                symbologies: ean13+qrcode
              - null:results=1
            output: ["-", "file:\(results)"]
            max-frames: 10
            metrics-interval: 0
            backpressure: block
            stdin-commands: false
            """)
        let fromFile = try CVHostBinary.run(["run", "--config", config], timeout: 120)
        #expect(fromFile.exitCode == 0, "\(fromFile.stderr)")
        let fromFlags = try CVHostBinary.run(["run", "--input", "a=\(video)", "--input", "b=\(video)", "--plugin", "barcode:symbologies=ean13+qrcode",
                                              "--plugin", "null:results=1", "--max-frames", "10", "--metrics-interval", "0",
                                              "--backpressure", "block"], timeout: 120)
        #expect(fromFlags.exitCode == 0)
        #expect(!fromFile.comparableResults.isEmpty)
        #expect(fromFile.comparableResults.sorted() == fromFlags.comparableResults.sorted())
        #expect(Set(fromFile.events("result").compactMap { $0["source"] as? String }) == ["a", "b"])
        let started = try #require(fromFile.events("session.started").first)
        let plugins = try #require(started["plugins"] as? [[String: Any]])
        let options = try #require(plugins.first?["options"] as? [String: Any])
        #expect(options["symbologies"] as? String == "ean13+qrcode", "\(options)")
        // Each option as its type says: null's results is a number, not "1"; its delay_ms a number.
        let null = try #require(plugins.last?["options"] as? [String: Any])
        #expect(null["results"] as? Int == 1 && null["delay_ms"] as? Double == 0 && !(null["results"] is String), "\(null)")
        // The file output got the same lines as stdout.
        let written = try String(contentsOfFile: results, encoding: .utf8).split(separator: "\n")
        let printed = fromFile.stdout.split(separator: "\n")
        #expect(written.count == printed.count)
        #expect(written.firstIndex { !printed.contains($0) } == nil)
    }

    @Test("options on the command line override the file's; a list given there replaces the file's list")
    func commandLineOverrides() throws {
        let config = try ConfigFileTests.write("override.yaml", """
            input: [testsrc:160x120:unpaced, testsrc:320x240:unpaced]
            plugin: null:results=1
            max-frames: 50
            metrics-interval: 0
            """)
        let r = try CVHostBinary.run(["run", "--config", config, "--max-frames", "3", "--input", "only=testsrc:64x48:unpaced"], timeout: 60)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let stopped = r.events("session.stopped")
        #expect(stopped.count == 1)
        #expect(stopped.first?["source"] as? String == "only")
        #expect(stopped.first?["frames"] as? Int == 3, "\(stopped)")
        // --config=FILE works as well.
        let other = try ConfigFileTests.write("equals.yaml", "input: testsrc:unpaced\nplugin: null:results=1\nmax-frames: 2\nmetrics-interval: 0\n")
        let e = try CVHostBinary.run(["run", "--config=\(other)"], timeout: 60)
        #expect(e.exitCode == 0 && e.events("session.stopped").first?["frames"] as? Int == 2, "\(e.stderr)")
    }

    @Test("controls as a mapping are --control NAME=VALUE flags (checked as on the command line)")
    func controlsMapping() throws {
        // Not a camera input: the controls are read and then refused for what they are, not as YAML.
        let config = try ConfigFileTests.write("controls.yaml", "device: /dev/nonexistent\nplugin: null\ncontrol: {brightness: 140, loudness: 3}\n")
        let r = try CVHostBinary.run(["run", "--config", config], timeout: 30)
        #expect(r.exitCode == 64 && r.stderr.contains("unknown control 'loudness'"), "\(r.stderr)")
        let known = try ConfigFileTests.write("controls-ok.yaml", "input: testsrc\nplugin: null\ncontrol: {brightness: 140}\n")
        let k = try CVHostBinary.run(["run", "--config", known], timeout: 30)
        #expect(k.exitCode == 64 && k.stderr.contains(known + ":3: control: --format, --pixel-format and --control apply to cameras"), "\(k.stderr)")
    }

    @Test("every error names the file, the line and the key: exit 64, nothing on stdout")
    func errors() throws {
        let cases: [(String, String, String)] = [
            ("unknown.yaml", "input: testsrc\nplugins: barcode\n", ":2: unknown key 'plugins' (did you mean 'plugin'?)"),
            ("type.yaml", "input: testsrc\nplugin: null\nqueue-depth: deep\n", ":3: queue-depth: expected a whole number, not 'deep'"),
            ("flag.yaml", "input: testsrc\nplugin: null\nreconnect: maybe\n", ":3: reconnect: expected true or false, not 'maybe'"),
            ("range.yaml", "input: testsrc\nplugin: null\n\nqueue-depth: 0\n", ":4: queue-depth: --queue-depth must be from 1 to 1000"),
            ("enum.yaml", "input: testsrc\nplugin: null\nbackpressure: fast\n", ":3: backpressure:"),
            ("syntax.yaml", "input: [testsrc\nplugin: null\n", ":2:7: did not find expected ',' or ']'"),
            ("twice.yaml", "input: testsrc\nplugin: null\ninput: other\n", ":3: input given twice"),
            ("list.yaml", "- testsrc\n- null\n", ":1: write the settings as `key: value` lines"),
            ("nested.yaml", "input: testsrc\nplugin: null\nformat: [1, 2]\n", ":3: format: expected a single value"),
            ("pluginmap.yaml", "input: testsrc\nplugin:\n  - instances: 2\n", ":2: plugin: a plugin written as a mapping needs `name: NAME`"),
        ]
        for (name, text, expected) in cases {
            let path = try ConfigFileTests.write(name, text)
            let r = try CVHostBinary.run(["run", "--config", path], timeout: 30)
            #expect(r.exitCode == 64, "\(name): exit \(r.exitCode), \(r.stderr)")
            #expect(r.stdout.isEmpty, "\(name)")
            #expect(r.stderr.contains(path + expected), "\(name): \(r.stderr)")
        }
        let missing = try CVHostBinary.run(["run", "--config", ConfigFileTests.folder + "/none.yaml"], timeout: 30)
        #expect(missing.exitCode == 64 && missing.stderr.contains("config file \(ConfigFileTests.folder)/none.yaml does not exist"), "\(missing.stderr)")
    }

    @Test("every long option of `cvhost run` is a key of the file")
    func everyOptionIsAKey() throws {
        let help = try CVHostBinary.run(["run", "--help"], timeout: 30).stdout
        let options = Set(help.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," })
            .filter { $0.hasPrefix("--") && !$0.hasPrefix("--no-") }
            .map { String($0.dropFirst(2).prefix { $0.isLetter || $0 == "-" }) })
            .subtracting(["config", "help", "version", "", "plugin", "input"])
        #expect(options.count > 20, "\(options)")
        for option in options.sorted() {
            // No plugin and no input: nothing runs, whatever the value does.
            let path = try ConfigFileTests.write("key-\(option).yaml", "\(option): 1\n")
            let r = try CVHostBinary.run(["run", "--config", path], timeout: 30)
            #expect(!r.stderr.contains("unknown key"), "\(option): \(r.stderr)")
            #expect(r.exitCode == 64, "\(option): \(r.stderr)")
        }
    }
}
