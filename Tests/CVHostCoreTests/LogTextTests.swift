import Testing
@testable import CVHostCore

/// stderr shows text cvhost did not write (a file's name, a model's class names, a library's
/// message) without letting it steer the terminal or split a line.
@Suite("stderr: text from outside")
struct LogTextTests {
    @Test("newlines fold to spaces, tabs stay, other control characters are written as \\xNN, even before a combining mark")
    func printable() {
        #expect("plain é".printable() == "plain é")
        #expect("a\nb\r\tc".printable() == "a b \tc")
        #expect("\u{1b}[2J\u{1b}]0;x\u{07}".printable() == "\\x1b[2J\\x1b]0;x\\x07")
        #expect("\u{1b}\u{301}\u{85}\u{7f}".printable() == "\\x1b\u{301}\\x85\\x7f")
    }
}
