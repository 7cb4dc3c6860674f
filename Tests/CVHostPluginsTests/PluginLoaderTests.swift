import CVHostCore
import CVHostOutput
import CVHostPluginABI
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
        let byName = try loader().find("good", isPath: false)
        #expect(byName.name == "good" && byName.version == "0.0.1" && byName.pixelFormats == [.gray8])
        #expect(byName.options.map(\.name) == ["level", "mode"])
        #expect(byName.options[1].choices == ["fast", "slow"])
        #expect(byName.abiMajor == 2 && byName.abiMinor == Int(CVHOST_PLUGIN_ABI_MINOR) && !byName.hasOrderedStage)
        let byPath = try loader().find(path, isPath: true)
        #expect(byPath.path == path)
        #expect(loader().discover().map(\.name) == ["good"])
    }

    @Test("the info is read from the file: a plugin whose constructor would crash is read, not run")
    func readWithoutLoading() throws {
        try PluginFixtures.build(name: "crashonload", defines: ["CRASH_ON_LOAD"], in: folder)
        let info = try loader().find("crashonload", isPath: false)
        #expect(info.name == "crashonload" && info.options.count == 2 && info.hints.autoFocusRangeRestriction == .none)
    }

    @Test("a plugin built against the frozen ABI 2.0 header (a smaller descriptor, no ordered stage) is read, created and destroyed (frames: RefusalTests.abi20Runs)")
    func abi20() throws {
        let path = try PluginFixtures.build(name: "old", in: folder, includeDir: PluginFixtures.frozenABI20IncludeDir)
        let info = try loader().find(path, isPath: true)
        #expect(info.abiMajor == 2 && info.abiMinor == 0 && !info.hasOrderedStage)
        let runner = try PluginRunner(plugin: info, source: "test", index: 0, options: [], queueDepth: 2, backpressure: nil,
                                      sink: JSONLineWriter())
        runner.shutdown()
    }

    @Test("an ordered stage must be whole")
    func incompleteOrderedStage() throws {
        try PluginFixtures.build(name: "halfstage", defines: ["ORDERED_STAGE", "BREAK_ORDERED_STAGE"], in: folder)
        let e = refusal { _ = try loader().find("halfstage", isPath: false) }
        #expect(e?.kind == .invalidDescriptor && e?.message.contains("ordered stage is incomplete") == true)
        try PluginFixtures.build(name: "stage", defines: ["ORDERED_STAGE"], in: folder)
        #expect(try loader().find("stage", isPath: false).hasOrderedStage)
    }

    @Test("every Swift pixel format has the header's value, and every header format is known")
    func pixelFormatsMatchTheHeader() {
        let header: [PixelFormat: cvhost_pixel_format] = [
            .gray8: CVHOST_PIXEL_FORMAT_GRAY8, .i420: CVHOST_PIXEL_FORMAT_I420, .nv12: CVHOST_PIXEL_FORMAT_NV12,
            .yuyv: CVHOST_PIXEL_FORMAT_YUYV, .rgb24: CVHOST_PIXEL_FORMAT_RGB24, .bgr24: CVHOST_PIXEL_FORMAT_BGR24,
        ]
        for format in PixelFormat.allCases {
            #expect(header[format]?.rawValue == format.rawValue, "\(format) has no header value or a different one")
        }
        #expect(Set(header.keys) == Set(PixelFormat.allCases))
    }

    @Test("file missing")
    func missing() {
        let e = refusal { _ = try loader().find("nothere", isPath: false) }
        #expect(e?.kind == .notFound && e?.kind.exitCode == 10)
        #expect(e?.message.contains("libcvhost-nothere.so") == true)
        #expect(refusal { _ = try loader().find(folder + "/libnope.so", isPath: true) }?.kind == .notFound)
    }

    @Test("not a shared object")
    func notSharedObject() throws {
        let path = folder + "/libcvhost-text.so"
        try "this is not an ELF file\n".write(toFile: path, atomically: true, encoding: .utf8)
        let e = refusal { _ = try loader().find("text", isPath: false) }
        #expect(e?.kind == .notSharedObject && e?.kind.exitCode == 11)
    }

    @Test("no entry symbol")
    func noEntry() throws {
        try PluginFixtures.build(name: "noentry", defines: ["BREAK_NO_ENTRY"], in: folder)
        let e = refusal { _ = try loader().find("noentry", isPath: false) }
        #expect(e?.kind == .noEntrySymbol && e?.kind.exitCode == 12)
        #expect(e?.message.contains("exports no cvhost_plugin descriptor") == true)
    }

    @Test("ABI mismatch")
    func abiMismatch() throws {
        try PluginFixtures.build(name: "oldabi", defines: ["BREAK_ABI"], in: folder)
        let e = refusal { _ = try loader().find("oldabi", isPath: false) }
        #expect(e?.kind == .abiMismatch && e?.kind.exitCode == 13)
        #expect(e?.message.contains("ABI 2") == true)
    }

    @Test("an option named like a host option: rename it (not: rebuild)")
    func hostOptionName() throws {
        try PluginFixtures.build(name: "mirrored", defines: ["HOST_OPTION_NAME"], in: folder)
        let e = refusal { _ = try loader().find("mirrored", isPath: false) }
        #expect(e?.kind == .invalidDescriptor && e?.kind.exitCode == 14)
        #expect(e?.message.contains("its option 'mirror' has the name of a host option") == true)
        #expect(e?.message.contains("rename the option") == true)
        #expect(e?.message.contains("rebuild") == false)
    }

    @Test("a file name without a folder: exit 10 and the ./ to write")
    func fileNameWithoutFolder() throws {
        // Whether or not the file is in the current folder, dlopen would not look there.
        let e = refusal { _ = try loader().find("libcvhost-here.so", isPath: true) }
        #expect(e?.kind == .notFound && e?.kind.exitCode == 10)
        #expect(e?.message.contains("write ./libcvhost-here.so") == true)
        #expect(e?.message.contains("--plugin here") == true)
    }

    @Test("the header names every host option as reserved")
    func headerListsHostOptions() throws {
        let header = try String(contentsOfFile: PluginFixtures.includeDir + "/cvhost/plugin.h", encoding: .utf8)
        let start = try #require(header.range(of: "not one of the host's own, which every plugin takes:"))
        let list = header[start.upperBound...].prefix(400).replacingOccurrences(of: "*", with: " ")
        let listed = Set(list.split(whereSeparator: { !$0.isLetter && $0 != "_" }).map(String.init))
        for option in PluginConfiguration.hostOptions { #expect(listed.contains(option.name), "\(option.name)") }
    }

    @Test("each descriptor mistake is named with its field and the fix, not 'rebuild it'", arguments: [
        ("BREAK_NO_HEADER", "does not begin with CVHOST_PLUGIN_DESCRIPTOR_HEADER"),
        ("BREAK_NAME", "it has no name: set .name to a string constant (cvhost reads the descriptor from the file"),
        ("BREAK_DESTROY", "required callback destroy is missing: set .destroy"),
        ("BREAK_SPEC_SIZE", "option_spec_size is 0: set .option_spec_size = sizeof(cvhost_option_spec)"),
        ("BREAK_DEFAULT", "the default of option level ('9') is not valid"),
        ("BREAK_COUNT", "is .option_count larger than the options array? write .option_count = CVHOST_COUNT(options)"),
    ])
    func descriptorMistakes(define: String, message: String) throws {
        let name = "mistake" + define.lowercased().replacingOccurrences(of: "_", with: "")
        try PluginFixtures.build(name: name, defines: [define], in: folder)
        let e = refusal { _ = try PluginLoader(searchPath: [folder]).find(folder + "/libcvhost-\(name).so", isPath: true) }
        #expect(e?.kind == .invalidDescriptor && e?.kind.exitCode == 14, "\(String(describing: e))")
        #expect(e?.message.contains(message) == true, "\(e?.message ?? "accepted")")
        #expect(e?.message.contains("rebuild") == false, "\(e?.message ?? "")")
    }

    @Test("required callback missing")
    func missingCallback() throws {
        try PluginFixtures.build(name: "noprocess", defines: ["BREAK_PROCESS"], in: folder)
        let e = refusal { _ = try loader().find("noprocess", isPath: false) }
        #expect(e?.kind == .invalidDescriptor && e?.kind.exitCode == 14)
        #expect(e?.message.contains("process") == true)
    }

    @Test("invalid name: typed by the user, declared by the plugin, or not matching the file")
    func invalidName() throws {
        #expect(refusal { _ = try loader().find("Bad Name!", isPath: false) }?.kind == .invalidName)
        #expect(refusal { _ = try loader().find("..", isPath: false) }?.kind == .invalidName)
        let path = try PluginFixtures.build(name: "Has Spaces", in: folder, fileName: "libcvhost-spaces.so")
        let e = refusal { _ = try loader().find(path, isPath: true) }
        #expect(e?.kind == .invalidName && e?.kind.exitCode == 15)
        try PluginFixtures.build(name: "other", in: folder, fileName: "libcvhost-mismatch.so")
        #expect(refusal { _ = try loader().find("mismatch", isPath: false) }?.kind == .invalidName)
    }

    @Test("create() failed, with the plugin's own message")
    func createFailed() throws {
        try PluginFixtures.build(name: "nocreate", defines: ["BREAK_CREATE"], in: folder)
        let plugin = try loader().find("nocreate", isPath: false)
        let e = refusal {
            _ = try PluginRunner(plugin: plugin, source: "test", index: 0, options: [], queueDepth: 2, backpressure: nil, sink: JSONLineWriter())
        }
        #expect(e?.kind == .createFailed && e?.kind.exitCode == 16)
        #expect(e?.message.contains("model file /nonexistent/model.bin is missing") == true)
    }

    @Test("unknown option and bad option values")
    func options() throws {
        try PluginFixtures.build(name: "opts", in: folder)
        let plugin = try loader().find("opts", isPath: false)
        func start(_ options: [(String, String)]) -> PluginLoadError? {
            refusal {
                let r = try PluginRunner(plugin: plugin, source: "test", index: 0, options: options.map { (key: $0.0, value: $0.1) },
                                         queueDepth: 2, backpressure: nil, sink: JSONLineWriter())
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
