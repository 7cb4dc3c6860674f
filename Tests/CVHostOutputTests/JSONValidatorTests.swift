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

    @Test("a result's box, label, confidence and own track id are noted while it is checked, and nowhere else")
    func resultFields() throws {
        let f = try JSONValidator.checkedResult(
            #"{"label":"caf\u00e9 \ud83d\ude00\n","confidence":0.5,"bounds":{"x":1,"y":2.5,"width":3e1,"height":4,"z":[9]},"#
                + #""other":{"label":"no","bounds":{"x":7}},"list":[{"confidence":0.9}]}"#).fields
        #expect(f.label == "café 😀\n")
        #expect(f.confidence == 0.5)
        #expect(f.bounds == ResultFields.Bounds(x: 1, y: 2.5, width: 30, height: 4))
        #expect(!f.hasTrackID)
        // Not a box: a member missing, a string where a number goes; a label that is no string.
        #expect(try JSONValidator.checkedResult(#"{"bounds":{"x":1,"y":2,"width":3}}"#).fields.bounds == nil)
        #expect(try JSONValidator.checkedResult(#"{"bounds":{"x":"1","y":2,"width":3,"height":4}}"#).fields.bounds == nil)
        #expect(try JSONValidator.checkedResult(#"{"label":7,"track_id":null}"#).fields == {
            var g = ResultFields()
            g.hasTrackID = true
            return g
        }())
    }

    @Test("a result line knows where its data starts: the track id goes first in it, once")
    func trackIDInResultLine() throws {
        for data in [#"{"bounds":{"x":1,"y":2,"width":3,"height":4}}"#, "{}"] {
            let checked = try JSONValidator.checkedResult(data)
            let line = JSONObject.envelope(event: "result", source: "s", plugin: "p", tsNs: 0)
                .resultLine(type: "box", data: checked.bytes, fields: checked.fields)
            let tagged = try #require(line.with(trackID: 12))
            let text = String(decoding: tagged.bytes, as: UTF8.self)
            #expect(text.hasSuffix(#""type":"box","data":{"track_id":12"# + (data == "{}" ? "}}\n" : "," + data.dropFirst() + "}\n")))
            #expect(tagged.with(trackID: 13) == nil)
        }
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
