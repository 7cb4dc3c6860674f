import CVHostCore
import CVHostLines
import Testing
@testable import CVHostPlugins

@Suite("Results of parallel instances are written in frame order")
struct ResultSequencerTests {
    @Test("tickets handed in out of order are written in order")
    func reorders() {
        let written = Locked<[String]>([])
        // Each ticket's lines together, and empty tickets too (a frame with no results is a frame).
        let s = ResultSequencer { lines, _, _ in written.withLock { $0.append(lines.map { String(decoding: $0.bytes, as: UTF8.self) }.joined(separator: "+")) } }
        s.submit(ticket: 2, lines: [line("c")], frame: nil)
        s.submit(ticket: 1, lines: [], frame: nil)
        #expect(written.withLock { $0 }.isEmpty)
        #expect(s.heldCount == 2)
        s.submit(ticket: 0, lines: [line("a1"), line("a2")], frame: nil)
        #expect(written.withLock { $0 } == ["a1+a2", "", "c"])
        #expect(s.heldCount == 0)
    }

    private func line(_ text: String) -> OutputLine {
        OutputLine(bytes: Array(text.utf8), route: .init(event: "result", source: nil, plugin: nil))
    }
}
