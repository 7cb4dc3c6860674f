import Testing
@testable import CVHostCore

@Suite("PathText: file names that are not UTF-8")
struct PathTextTests {
    @Test("a UTF-8 name is its own text; other bytes are \\xNN and then a backslash is \\\\")
    func text() {
        #expect(PathText.text(Array("café/a\\b.png".utf8)) == "café/a\\b.png")
        #expect(PathText.text([0x64, 0xFE, 0x2F, 0x71, 0xFF]) == "d\\xfe/q\\xff")
        #expect(PathText.text([0x63, 0x61, 0x66, 0xE9, 0x5C, 0x2E]) == "caf\\xe9\\\\.")
        // A sequence cut short is escaped byte by byte; the valid character after it is kept.
        #expect(PathText.text([0xE6, 0x97, 0xC3, 0xA9]) == "\\xe6\\x97é")
    }

    @Test("the text reads back to the bytes; a text cvhost would not write names itself")
    func unescaped() {
        for bytes: [UInt8] in [[0x64, 0xFE], [0x63, 0x61, 0x66, 0xE9, 0x5C, 0x2E], [0xE6, 0x97, 0xC3, 0xA9], [0x80]] {
            #expect(PathText.unescaped(PathText.text(bytes)) == bytes)
        }
        for literal in ["a\\b", "\\x41", "a\\xzz", "\\x", "caf\\xc3\\xa9", "x\\xff\\y"] {
            #expect(PathText.unescaped(literal) == nil, "\(literal)")
            #expect(PathText.fileSystemBytes(literal) == Array(literal.utf8))
        }
    }
}
