import CVHostRun
import CVHostTestSupport
import Foundation
import Testing

/// `--config FILE` read into the arguments it stands for, merged with the command line's, and
/// errors located in the file.
@Suite("RunConfigFile")
struct RunConfigFileTests {
    static let folder = TestFolders.make("run-config")

    static func file(_ text: String, name: String = #function) throws -> RunConfigFile {
        let path = folder + "/" + name.filter(\.isLetter) + ".yaml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return try RunConfigFile(path: path)
    }

    @Test("every kind of key becomes the flags it stands for: lists, plugin and control mappings, numbers, flags")
    func arguments() throws {
        let file = try Self.file("""
            input: [a.mp4, b=b.mp4]
            plugin:
              - barcode:symbologies=qr
              - name: face
                instances: 2
                note: "a,b"
            control: {brightness: 140}
            queue-depth: 3
            reconnect: true
            stdin-commands: false
            oneshot: false
            """)
        #expect(file.merged(with: []) == [
            "--input", "a.mp4", "--input", "b=b.mp4",
            "--plugin", "barcode:symbologies=qr", "--plugin", "face:instances=2,note=a\\,b",
            "--control", "brightness=140",
            "--queue-depth", "3", "--reconnect", "--no-stdin-commands",
        ])
    }

    @Test("the command line overrides the file: a list as a whole, a flag by either of its names, -v for verbose")
    func commandLineOverrides() throws {
        let file = try Self.file("""
            input: [a.mp4, b.mp4]
            plugin: null
            stdin-commands: false
            verbose: true
            duration: 5
            """)
        let merged = file.merged(with: ["--input", "c.mp4", "--stdin-commands", "-v", "--duration=2"])
        #expect(merged == ["--plugin", "null", "--input", "c.mp4", "--stdin-commands", "-v", "--duration=2"])
        // Words after -- are no options.
        #expect(file.merged(with: ["--", "--plugin"]).contains("null"))
    }

    @Test("an error about a value from the file names the file, the line and the key; one from the command line does not")
    func locate() throws {
        let file = try Self.file("""
            plugin: null
            queue-depth: 5000
            http-linger: 3
            """)
        let message = "--queue-depth must be from 1 to 1000"
        #expect(file.locate(message, commandLine: []) == "\(file.path):2: queue-depth: \(message)")
        #expect(file.locate(message, commandLine: ["--queue-depth", "5000"]) == message)
        // The longer name that matches at the same place: --http-linger, not --http.
        #expect(file.locate("--http-linger goes with --http", commandLine: []).hasPrefix("\(file.path):3: http-linger:"))
    }

    @Test("refusals: an unknown key (with the one meant), a value of the wrong kind, a duplicate key, a list where one value goes")
    func refusals() throws {
        func refusal(_ text: String, name: String = #function) -> String {
            do { _ = try Self.file(text, name: name); return "" } catch { return "\(error)" }
        }
        #expect(refusal("plugins: null\n", name: "a").hasSuffix("a.yaml:1: unknown key 'plugins' (did you mean 'plugin'?); the keys are run's long options: cvhost run --help"))
        #expect(refusal("plugin: null\nqueue-depth: two\n", name: "b").hasSuffix("b.yaml:2: queue-depth: expected a whole number, not 'two'"))
        #expect(refusal("plugin: null\nreconnect: maybe\n", name: "c").hasSuffix("c.yaml:2: reconnect: expected true or false, not 'maybe'"))
        #expect(refusal("plugin: null\nplugin: face\n", name: "d").hasSuffix("d.yaml:2: plugin given twice; give each key once"))
        #expect(refusal("format: [a, b]\n", name: "e").hasSuffix("e.yaml:1: format: expected a single value, not a list or a mapping"))
        #expect(refusal("- a\n- b\n", name: "f").hasSuffix("f.yaml:1: write the settings as `key: value` lines (e.g. `plugin: barcode`)"))
        #expect(refusal("", name: "g") == "")
    }

    @Test("--config FILE and --config=FILE are found in run's arguments, not after --")
    func configPath() {
        #expect(RunConfigFile.configPath(in: ["--plugin", "null", "--config", "a.yaml"]) == "a.yaml")
        #expect(RunConfigFile.configPath(in: ["--config=b.yaml"]) == "b.yaml")
        #expect(RunConfigFile.configPath(in: ["--", "--config", "a.yaml"]) == nil)
        #expect(RunConfigFile.configPath(in: ["--config"]) == nil)
    }
}
