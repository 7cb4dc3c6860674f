import CVHostLines
@testable import CVHostOutput
import Testing

/// A broker sink's in-flight window on its own: what is published, acknowledged, and sent again
/// after a lost connection or a failed delivery, in which order; and the reconnection's backoff.
@Suite("Brokers: the in-flight window")
struct InflightWindowTests {
    static func line(_ n: Int) -> PendingLine {
        PendingLine(line: OutputLine(bytes: Array("{\"n\":\(n)}\n".utf8), route: .init(event: "result", source: "s", plugin: "p")),
                    order: UInt64(n))
    }
    static func numbers(_ lines: [PendingLine]) -> [Int] {
        lines.map { Int(String(decoding: $0.line.bytes.dropFirst(5).dropLast(2), as: UTF8.self)) ?? -1 }
    }

    @Test("room shrinks as lines are published and grows as they are acknowledged; unknown ids count for nothing")
    func publishAndAcknowledge() {
        var w = InflightWindow(capacity: 3)
        #expect(w.room == 3 && w.isEmpty)
        for n in 0..<3 { w.published(Self.line(n), id: Int64(10 + n)) }
        #expect(w.room == 0 && w.unacknowledged == 3)
        #expect(w.acknowledge([11, 99]).count == 1)
        #expect(w.room == 1 && w.unacknowledged == 2)
        #expect(w.acknowledge([]).count == 0)
        #expect(w.acknowledge([10, 12]).count == 2 && w.isEmpty)
    }

    @Test("a lost connection: the lines in flight are sent again first, in order, before those already waiting; only as many as fit")
    func resendAfterLoss() {
        var w = InflightWindow(capacity: 2)
        w.published(Self.line(0), id: 1)
        w.published(Self.line(1), id: 2)
        #expect(w.acknowledge([1]).count == 1)
        w.published(Self.line(2), id: 3)
        w.connectionLost()
        #expect(w.unacknowledged == 2 && w.room == 0)
        // Acknowledgements of the old connection's ids no longer count.
        #expect(w.acknowledge([2, 3]).count == 0)
        let again = w.takeResend()
        #expect(Self.numbers(again) == [1, 2])
        // Published again on the new connection, one is not (the connection goes): it is first next time.
        w.published(again[0], id: 1)
        w.notPublished([again[1]])
        #expect(w.unacknowledged == 2)
        w.connectionLost()
        #expect(Self.numbers(w.takeResend()) == [1, 2])
    }

    @Test("failed deliveries are sent again first, in the order the lines were taken, and were sent before")
    func failedDeliveries() {
        var w = InflightWindow(capacity: 4)
        for n in 0..<4 { w.published(Self.line(n), id: Int64(n)) }
        #expect(w.failed([3, 1, 42]) == 2)
        #expect(w.acknowledge([0]).count == 1 && w.unacknowledged == 3)
        let again = w.takeResend()
        #expect(Self.numbers(again) == [1, 3] && again.allSatisfy(\.sentBefore))
    }

    @Test("at the end, what is left is counted once and the window is empty")
    func abandon() {
        var w = InflightWindow(capacity: 4)
        w.published(Self.line(0), id: 1)
        w.notPublished([Self.line(1), Self.line(2)])
        #expect(w.abandon().all == 3)
        #expect(w.isEmpty && w.abandon().all == 0)
    }

    @Test("the reconnection backoff: 0.5 s doubling to 30 s, back to 0.5 s once connected")
    func backoff() {
        var b = ReconnectBackoff()
        let waits = (0..<9).map { _ in b.failed() }
        #expect(waits == [0.5, 1, 2, 4, 8, 16, 30, 30, 30].map { UInt64($0 * 1e9) })
        b.connected()
        #expect(b.failed() == 500_000_000)
    }
}
