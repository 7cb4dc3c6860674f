/// Checks that text from a plugin is exactly one JSON object (RFC 8259, UTF-8) and returns it
/// minified: no insignificant white space, so no newline can reach stdout inside it.
///
/// This is what makes "a plugin can never corrupt stdout" true: whatever bytes a plugin hands
/// to `emit`, only a checked, single-line object is written. Strings are kept as the plugin
/// wrote them (valid escapes included); raw control characters, invalid UTF-8, lone
/// surrogates in escapes, trailing data, and nesting deeper than `maxDepth` are refused.
public enum JSONValidator {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let offset: Int
        public let reason: String
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    public static let maxDepth = 64
    public static let maxBytes = 1 << 20

    /// - Returns: the object, minified, as UTF-8 bytes.
    /// - Throws: `Failure` naming the byte offset and the reason.
    public static func minifiedObject(_ input: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        try checkedResult(input).bytes
    }

    /// The object, minified, and the fields of it the analytics read (noted on the way: no second parse).
    public static func checkedResult(_ input: UnsafeBufferPointer<UInt8>) throws -> (bytes: [UInt8], fields: ResultFields) {
        guard input.count <= maxBytes else { throw Failure(offset: maxBytes, reason: "larger than 1 MiB") }
        var parser = Parser(input: input)
        parser.skipSpace()
        guard parser.peek == UInt8(ascii: "{") else { throw parser.fail("a result must be a JSON object") }
        try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.pos == input.count else { throw parser.fail("data after the object") }
        return (parser.out, parser.fields)
    }

    public static func minifiedObject(_ text: String) throws -> [UInt8] {
        try checkedResult(text).bytes
    }

    public static func checkedResult(_ text: String) throws -> (bytes: [UInt8], fields: ResultFields) {
        var copy = text
        return try copy.withUTF8 { try checkedResult($0) }
    }

    private struct Parser {
        let input: UnsafeBufferPointer<UInt8>
        var pos = 0
        var out: [UInt8] = []
        var fields = ResultFields()
        /// Which of `fields` the value being read is (none inside arrays and deeper objects).
        var slot = ResultFields.Slot.none
        /// A string being read for `fields` (the label), unescaped.
        var scalars: String.UnicodeScalarView?

        init(input: UnsafeBufferPointer<UInt8>) {
            self.input = input
            out.reserveCapacity(input.count)
        }

        var peek: UInt8? { pos < input.count ? input[pos] : nil }

        func fail(_ reason: String) -> Failure { Failure(offset: pos, reason: reason) }

        mutating func skipSpace() {
            while let c = peek, c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { pos += 1 }
        }

        mutating func expect(_ c: UInt8) throws {
            guard peek == c else { throw fail("expected '\(Character(Unicode.Scalar(c)))'") }
            out.append(c)
            pos += 1
        }

        mutating func value(depth: Int) throws {
            guard depth < JSONValidator.maxDepth else { throw fail("nested deeper than \(JSONValidator.maxDepth)") }
            skipSpace()
            guard let c = peek else { throw fail("unexpected end") }
            switch c {
            case UInt8(ascii: "{"):
                let container = slot
                try expect(c)
                skipSpace()
                if peek == UInt8(ascii: "}") { return try expect(UInt8(ascii: "}")) }
                // Strict readers (Go's, serde) refuse an object that names a key twice.
                var keys = Set<ArraySlice<UInt8>>()
                while true {
                    skipSpace()
                    guard peek == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                    let keyStart = out.count, keyOffset = pos
                    try string()
                    guard keys.insert(out[keyStart...]).inserted else {
                        throw Failure(offset: keyOffset, reason: "key \(String(decoding: out[keyStart...], as: UTF8.self)) given twice in one object")
                    }
                    slot = ResultFields.Slot(key: out[(keyStart + 1)..<(out.count - 1)], depth: depth, container: container)
                    if slot == .trackID { fields.hasTrackID = true }
                    skipSpace()
                    try expect(UInt8(ascii: ":"))
                    try value(depth: depth + 1)
                    skipSpace()
                    if peek == UInt8(ascii: ",") { try expect(UInt8(ascii: ",")); continue }
                    return try expect(UInt8(ascii: "}"))
                }
            case UInt8(ascii: "["):
                slot = .none
                try expect(c)
                skipSpace()
                if peek == UInt8(ascii: "]") { return try expect(UInt8(ascii: "]")) }
                while true {
                    try value(depth: depth + 1)
                    skipSpace()
                    if peek == UInt8(ascii: ",") { try expect(UInt8(ascii: ",")); continue }
                    return try expect(UInt8(ascii: "]"))
                }
            case UInt8(ascii: "\""):
                if slot == .label { scalars = String.UnicodeScalarView() }
                try string()
                if let s = scalars { fields.label = String(s) }
                scalars = nil
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try number()
            default:
                throw fail("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws {
            let bytes = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
            for b in bytes {
                guard peek == b else { throw fail("invalid literal") }
                out.append(b)
                pos += 1
            }
        }

        mutating func digits() throws {
            guard let c = peek, c >= 0x30, c <= 0x39 else { throw fail("expected a digit") }
            while let c = peek, c >= 0x30, c <= 0x39 {
                out.append(c)
                pos += 1
            }
        }

        mutating func number() throws {
            let start = out.count, offset = pos
            try numberText()
            // 1e999 is valid JSON text but no reader's double: refuse it rather than pass on an infinity.
            guard let value = Double(String(decoding: out[start...], as: UTF8.self)), value.isFinite else {
                throw Failure(offset: offset, reason: "number \(String(decoding: out[start...].prefix(40), as: UTF8.self)) is out of a double's range")
            }
            fields.note(value, in: slot)
        }

        mutating func numberText() throws {
            if peek == UInt8(ascii: "-") { try expect(UInt8(ascii: "-")) }
            if peek == UInt8(ascii: "0") {
                try expect(UInt8(ascii: "0"))
                if let c = peek, c >= 0x30, c <= 0x39 { throw fail("leading zero") }
            } else {
                try digits()
            }
            if peek == UInt8(ascii: ".") {
                try expect(UInt8(ascii: "."))
                try digits()
            }
            if let c = peek, c == UInt8(ascii: "e") || c == UInt8(ascii: "E") {
                out.append(c)
                pos += 1
                if let s = peek, s == UInt8(ascii: "+") || s == UInt8(ascii: "-") {
                    out.append(s)
                    pos += 1
                }
                try digits()
            }
        }

        mutating func hex4() throws -> UInt32 {
            var v: UInt32 = 0
            for _ in 0..<4 {
                guard let c = peek else { throw fail("short \\u escape") }
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                case 0x61...0x66: d = UInt32(c - 0x61 + 10)
                default: throw fail("bad \\u escape")
                }
                v = v << 4 | d
                out.append(c)
                pos += 1
            }
            return v
        }

        mutating func string() throws {
            try expect(UInt8(ascii: "\""))
            while true {
                guard let c = peek else { throw fail("unterminated string") }
                switch c {
                case UInt8(ascii: "\""):
                    return try expect(c)
                case UInt8(ascii: "\\"):
                    out.append(c)
                    pos += 1
                    guard let e = peek else { throw fail("unterminated escape") }
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                        UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        out.append(e)
                        pos += 1
                        scalars?.append(Self.unescaped(e))
                    case UInt8(ascii: "u"):
                        out.append(e)
                        pos += 1
                        let unit = try hex4()
                        if (0xD800...0xDBFF).contains(unit) {
                            // A high surrogate must be followed by an escaped low one.
                            guard peek == UInt8(ascii: "\\") else { throw fail("lone surrogate") }
                            out.append(UInt8(ascii: "\\"))
                            pos += 1
                            guard peek == UInt8(ascii: "u") else { throw fail("lone surrogate") }
                            out.append(UInt8(ascii: "u"))
                            pos += 1
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw fail("lone surrogate") }
                            scalars?.append(scalar: 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                        } else if (0xDC00...0xDFFF).contains(unit) {
                            throw fail("lone surrogate")
                        } else {
                            scalars?.append(scalar: unit)
                        }
                    default:
                        throw fail("invalid escape")
                    }
                case 0x00..<0x20:
                    throw fail("control character in a string (escape it)")
                case 0x20..<0x80:
                    out.append(c)
                    pos += 1
                    scalars?.append(Unicode.Scalar(c))
                default:
                    try utf8Sequence()
                }
            }
        }

        /// Copies one multi-byte UTF-8 sequence, refusing overlong forms, surrogates and > U+10FFFF.
        mutating func utf8Sequence() throws {
            let c = input[pos]
            let (count, minScalar): (Int, UInt32) =
                switch c {
                case 0xC2...0xDF: (2, 0x80)
                case 0xE0...0xEF: (3, 0x800)
                case 0xF0...0xF4: (4, 0x10000)
                default: throw fail("invalid UTF-8")
                }
            guard pos + count <= input.count else { throw fail("truncated UTF-8") }
            var scalar = UInt32(c) & (0xFF >> (count + 1))
            for i in 1..<count {
                let b = input[pos + i]
                guard b & 0xC0 == 0x80 else { throw fail("invalid UTF-8") }
                scalar = scalar << 6 | UInt32(b & 0x3F)
            }
            guard scalar >= minScalar, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else {
                throw fail("invalid UTF-8")
            }
            out.append(contentsOf: input[pos..<(pos + count)])
            pos += count
            scalars?.append(scalar: scalar)
        }

        /// The character a one-letter escape stands for.
        static func unescaped(_ e: UInt8) -> Unicode.Scalar {
            switch e {
            case UInt8(ascii: "b"): "\u{08}"
            case UInt8(ascii: "f"): "\u{0C}"
            case UInt8(ascii: "n"): "\n"
            case UInt8(ascii: "r"): "\r"
            case UInt8(ascii: "t"): "\t"
            default: Unicode.Scalar(e)
            }
        }
    }
}

private extension String.UnicodeScalarView {
    /// Appends a scalar the validator has already checked (never a surrogate, never past U+10FFFF).
    mutating func append(scalar value: UInt32) {
        if let s = Unicode.Scalar(value) { append(s) }
    }
}
