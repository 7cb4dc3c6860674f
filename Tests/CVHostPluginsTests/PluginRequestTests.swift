import CVHostCore
import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostPlugins

@Suite("--plugin NAME[:key=value,...]")
struct PluginRequestTests {
    @Test("names, options, paths and escapes")
    func parsing() throws {
        let plain = try PluginRequest(parsing: "barcode")
        #expect(plain.nameOrPath == "barcode" && plain.options.isEmpty && !plain.isPath)
        let withOptions = try PluginRequest(parsing: "null:delay_ms=50,results=2")
        #expect(withOptions.nameOrPath == "null")
        #expect(withOptions.options.map(\.key) == ["delay_ms", "results"])
        #expect(withOptions.options.map(\.value) == ["50", "2"])
        let path = try PluginRequest(parsing: "/opt/a:b/libcvhost-x.so:k=v")
        #expect(path.nameOrPath == "/opt/a:b/libcvhost-x.so" && path.isPath && path.options.map(\.value) == ["v"])
        let slashes = try PluginRequest(parsing: "face:cascade=/usr/share/x.xml,roi=0:0:1:1")
        #expect(slashes.nameOrPath == "face" && slashes.options.map(\.value) == ["/usr/share/x.xml", "0:0:1:1"])
        let pathWithSlashValue = try PluginRequest(parsing: "./libcvhost-y.so:model=/m/a.bin")
        #expect(pathWithSlashValue.nameOrPath == "./libcvhost-y.so" && pathWithSlashValue.options.map(\.value) == ["/m/a.bin"])
        let escaped = try PluginRequest(parsing: #"x:text=a\,b,eq=c=d"#)
        #expect(escaped.options.map(\.value) == ["a,b", "c=d"])
    }

    @Test("an option without a value is refused")
    func missingValue() {
        #expect(throws: PluginLoadError.self) { try PluginRequest(parsing: "null:delay_ms") }
    }

    @Test("option values are checked and normalized")
    func normalize() throws {
        let flag = PluginOptionSpec(name: "f", type: .bool, defaultValue: "false", help: "")
        #expect(try flag.normalize("on", plugin: "p") == "true")
        #expect(try flag.normalize("0", plugin: "p") == "false")
        let number = PluginOptionSpec(name: "n", type: .double, defaultValue: "1", help: "", range: 0...2)
        #expect(throws: PluginLoadError.self) { try number.normalize("nan", plugin: "p") }
        #expect(throws: PluginLoadError.self) { try number.normalize("2.5", plugin: "p") }
    }

    @Test("a file option is made absolute against the current folder, and refused when it is not a readable file")
    func fileOption() throws {
        let folder = TestFolders.make("file-option")
        try "x".write(toFile: folder + "/model.onnx", atomically: true, encoding: .utf8)
        let model = PluginOptionSpec(name: "model", type: .file, defaultValue: "", help: "")
        #expect(try model.normalize("", plugin: "p") == "")
        #expect(try model.normalize(folder + "/model.onnx", plugin: "p") == folder + "/model.onnx")
        // (The tests share one process: its current folder is not changed here.)
        let cwd = FileManager.default.currentDirectoryPath
        #expect(PathText.absolute("model.onnx") == cwd + "/model.onnx")
        #expect(PathText.absolute("/m.onnx") == "/m.onnx")
        for (value, says) in [("absent-\(getpid()).onnx", cwd + "/absent-\(getpid()).onnx: no such file"), (folder, "is not a regular file")] {
            do {
                _ = try model.normalize(value, plugin: "p")
                Issue.record("\(value) was taken")
            } catch let error as PluginLoadError {
                #expect(error.kind == .badOptionValue && error.message.contains(says) && error.message.contains("option model=\(value)"), "\(error.message)")
            }
        }
    }
}
