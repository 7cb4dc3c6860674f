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
}
