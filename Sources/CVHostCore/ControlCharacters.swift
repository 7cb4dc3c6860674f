/// What in text from outside (a file's name, a model's class names, a plugin's label) must not
/// reach a terminal, a protocol's name or a Prometheus label as it is: the control characters a
/// terminal obeys or a parser splits on, and the Unicode non-characters brokers refuse.
extension Unicode.Scalar {
    /// C0 controls (U+0000-U+001F, newline and tab among them), DEL and the C1 controls (U+0080-U+009F).
    public var isControlCharacter: Bool { value < 0x20 || (0x7F...0x9F).contains(value) }

    /// How a control character (or a byte that is not text) is shown: `\x1b`.
    public static func escaped(_ byte: UInt8) -> String { "\\x" + String(hexDigits[Int(byte >> 4)]) + String(hexDigits[Int(byte & 15)]) }
    private static let hexDigits = Array("0123456789abcdef")

    /// U+FDD0-U+FDEF and every U+xFFFE and U+xFFFF: never to be interchanged.
    public var isNoncharacter: Bool { (0xFDD0...0xFDEF).contains(value) || value & 0xFFFE == 0xFFFE }
}
