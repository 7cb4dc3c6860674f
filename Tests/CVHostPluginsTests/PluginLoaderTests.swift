import CVHostCore
import Foundation
import CVHostTestSupport
import Testing
@testable import CVHostPlugins

@Suite("Plugin loader: every refusal, with its own kind and exit code")
struct PluginLoaderTests {
    let folder = PluginFixtures.makeFolder()

    func loader() -> PluginLoader { PluginLoader(searchPath: [folder]) }

    func refusal(_ body: () throws -> Void) -> PluginLoadError? {
        do {
            try body()
            return nil
        } catch let e as PluginLoadError {
            return e
        } catch {
            return nil
        }
    }

    @Test("a good plugin loads by name and by path, with its descriptor read")
    func loads() throws {
        let path = try PluginFixtures.build(name: "good", in: folder)
        let byName = try loader().load("good", isPath: false)
        #expect(byName.name == "good" && byName.version == "0.0.1" && byName.pixelFormats == [.gray8])
        #expect(byName.options.map(\.name) == ["level", "mode"])
        #expect(byName.options[1].choices == ["fast", "slow"])
        let byPath = try loader().load(path, isPath: true)
        #expect(byPath.path == path)
        #expect(loader().discover().map(\.name) == ["good"])
    }

    @Test("file missing")
    func missing() {
        let e = refusal { _ = try loader().load("nothere", isPath: false) }
        #expect(e?.kind == .notFound && e?.kind.exitCode == 10)
        #expect(e?.message.contains("libcvhost-nothere.so") == true)
        #expect(refusal { _ = try loader().load(folder + "/libnope.so", isPath: true) }?.kind == .notFound)
    }

    @Test("not a shared object")
    func notSharedObject() throws {
        let path = folder + "/libcvhost-text.so"
        try "this is not an ELF file\n".write(toFile: path, atomically: true, encoding: .utf8)
        let e = refusal { _ = try loader().load("text", isPath: false) }
        #expect(e?.kind == .notSharedObject && e?.kind.exitCode == 11)
    }

    @Test("no entry symbol")
    func noEntry() throws {
        try PluginFixtures.build(name: "noentry", defines: ["BREAK_NO_ENTRY"], in: folder)
        let e = refusal { _ = try loader().load("noentry", isPath: false) }
        #expect(e?.kind == .noEntrySymbol && e?.kind.exitCode == 12)
        #expect(e?.message.contains("cvhost_plugin_entry") == true)
    }

    @Test("ABI mismatch")
    func abiMismatch() throws {
        try PluginFixtures.build(name: "oldabi", defines: ["BREAK_ABI"], in: folder)
        let e = refusal { _ = try loader().load("oldabi", isPath: false) }
        #expect(e?.kind == .abiMismatch && e?.kind.exitCode == 13)
        #expect(e?.message.contains("ABI 2") == true)
    }

    @Test("required callback missing")
    func missingCallback() throws {
        try PluginFixtures.build(name: "noprocess", defines: ["BREAK_PROCESS"], in: folder)
        let e = refusal { _ = try loader().load("noprocess", isPath: false) }
        #expect(e?.kind == .invalidDescriptor && e?.kind.exitCode == 14)
        #expect(e?.message.contains("process") == true)
    }

    @Test("invalid name: typed by the user, declared by the plugin, or not matching the file")
    func invalidName() throws {
        #expect(refusal { _ = try loader().load("Bad Name!", isPath: false) }?.kind == .invalidName)
        #expect(refusal { _ = try loader().load("..", isPath: false) }?.kind == .invalidName)
        let path = try PluginFixtures.build(name: "Has Spaces", in: folder, fileName: "libcvhost-spaces.so")
        let e = refusal { _ = try loader().load(path, isPath: true) }
        #expect(e?.kind == .invalidName && e?.kind.exitCode == 15)
        try PluginFixtures.build(name: "other", in: folder, fileName: "libcvhost-mismatch.so")
        #expect(refusal { _ = try loader().load("mismatch", isPath: false) }?.kind == .invalidName)
    }

    @Test("create() failed, with the plugin's own message")
    func createFailed() throws {
        try PluginFixtures.build(name: "nocreate", defines: ["BREAK_CREATE"], in: folder)
        let plugin = try loader().load("nocreate", isPath: false)
        let e = refusal {
            _ = try PluginRunner(plugin: plugin, source: "test", index: 0, options: [], queueDepth: 2, backpressure: nil, writer: JSONLineWriter())
        }
        #expect(e?.kind == .createFailed && e?.kind.exitCode == 16)
        #expect(e?.message.contains("model file /nonexistent/model.bin is missing") == true)
    }

    @Test("unknown option and bad option values")
    func options() throws {
        try PluginFixtures.build(name: "opts", in: folder)
        let plugin = try loader().load("opts", isPath: false)
        func start(_ options: [(String, String)]) -> PluginLoadError? {
            refusal {
                let r = try PluginRunner(plugin: plugin, source: "test", index: 0, options: options.map { (key: $0.0, value: $0.1) },
                                         queueDepth: 2, backpressure: nil, writer: JSONLineWriter())
                r.shutdown()
            }
        }
        let unknown = start([("colour", "red")])
        #expect(unknown?.kind == .unknownOption && unknown?.kind.exitCode == 17)
        #expect(unknown?.message.contains("level, mode") == true)
        for bad in [("level", "9"), ("level", "x"), ("mode", "medium"), ("instances", "0"), ("backpressure", "maybe")] {
            let e = start([bad])
            #expect(e?.kind == .badOptionValue && e?.kind.exitCode == 18, "\(bad) should be refused")
        }
        #expect(start([("level", "5"), ("mode", "slow"), ("instances", "2"), ("max_fps", "10")]) == nil)
    }
}
