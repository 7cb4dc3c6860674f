import Testing
@testable import CVHostLines
@testable import CVHostOutput

@Suite("Plugin JSON is checked and minified")
struct JSONValidatorTests {
    func minified(_ s: String) throws -> String { String(decoding: try JSONValidator.minifiedObject(s), as: UTF8.self) }

    @Test("valid objects come out on one line, strings untouched")
    func valid() throws {
        #expect(try minified(" {\n \"a\" : [1, -2.5e3, true, null, {\"b\":\"x y\"}],\n\t\"c\":\"\\n\\u00e9\\ud83d\\ude00\"} ")
            == #"{"a":[1,-2.5e3,true,null,{"b":"x y"}],"c":"\n\u00e9\ud83d\ude00"}"#)
        #expect(try minified("{}") == "{}")
        #expect(try minified("{\"é\":\"日本\"}") == "{\"é\":\"日本\"}")
    }

    @Test("everything that could break a line or the stream is refused",
          arguments: [
              "{\"a\":\"line\nbreak\"}", "{\"a\":1}\n{\"b\":2}", "[1]", "\"text\"", "{\"a\":", "{\"a\":01}", "{\"a\":1,}",
              "{\"a\":\"\\x\"}", "{\"a\":\"\\ud800\"}", "{\"a\":tru}", "{a:1}", "", "{\"a\":1} x",
              String(repeating: "{\"a\":", count: 100) + "1" + String(repeating: "}", count: 100),
          ])
    func refused(_ text: String) {
        #expect(throws: JSONValidator.Failure.self) { try JSONValidator.minifiedObject(text) }
    }

    @Test("what strict readers (Go, serde) refuse is refused too: a number beyond a double, a key given twice")
    func strictReaders() throws {
        for text in ["{\"a\":1e999}", "{\"a\":-1e400}", "{\"a\":[1,2e308]}", "{\"a\":1,\"a\":2}", "{\"o\":{\"k\":1,\"k\":1}}"] {
            #expect(throws: JSONValidator.Failure.self, "\(text)") { try JSONValidator.minifiedObject(text) }
        }
        #expect(throws: JSONValidator.Failure.self) { try JSONValidator.minifiedObject("{\"a\":1e999}") }
        do {
            _ = try JSONValidator.minifiedObject("{\"x\":1,\"x\":2}")
        } catch {
            #expect("\(error)".contains("key \"x\" given twice"))
        }
        // Still fine: the same key in different objects, tiny and large finite numbers.
        #expect(try minified("{\"a\":{\"k\":1},\"b\":{\"k\":2},\"c\":1e-400,\"d\":1.7e308}") == "{\"a\":{\"k\":1},\"b\":{\"k\":2},\"c\":1e-400,\"d\":1.7e308}")
    }

    @Test("invalid UTF-8 is refused")
    func invalidUTF8() {
        for bytes: [UInt8] in [[0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D], [0x7B, 0x22, 0xC0, 0xAF, 0x22, 0x3A, 0x31, 0x7D],
                               [0x7B, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x3A, 0x31, 0x7D]] {
            #expect(throws: JSONValidator.Failure.self) {
                try bytes.withUnsafeBufferPointer { try JSONValidator.minifiedObject($0) }
            }
        }
    }

    @Test("host-built objects escape what they must")
    func builder() {
        var o = JSONObject()
        o.set("s", "a\"b\\c\nd\u{01}")
        o.set("n", 1.23456, decimals: 2)
        o.set("i", 42)
        o.setSeconds("t", nanoseconds: 1_700_000_000_000_123_456)
        o.set("none", nil as String?)
        #expect(o.text == #"{"s":"a\"b\\c\nd\u0001","n":1.23,"i":42,"t":1700000000.000123,"none":null}"#)
    }
}
