import Synchronization
import Testing
@testable import CVHostPlugins

@Suite("Results of parallel instances are written in frame order")
struct ResultSequencerTests {
    @Test("tickets handed in out of order are written in order")
    func reorders() {
        let written = Mutex<[String]>([])
        let s = ResultSequencer { line in written.withLock { $0.append(String(decoding: line, as: UTF8.self)) } }
        s.submit(ticket: 2, lines: [Array("c".utf8)])
        s.submit(ticket: 1, lines: [])
        #expect(written.withLock { $0 }.isEmpty)
        #expect(s.heldCount == 2)
        s.submit(ticket: 0, lines: [Array("a1".utf8), Array("a2".utf8)])
        #expect(written.withLock { $0 } == ["a1", "a2", "c"])
        #expect(s.heldCount == 0)
    }
}
