import CVHostCore
import CVHostLines
import Testing
@testable import CVHostRun

/// One runner's analytics slot, filled, replaced and emptied while frames go through it: what a
/// replaced stage still had open is written before the next frame's results, never lost.
@Suite("TrackingSlot")
struct TrackingSlotTests {
    static func results(_ sequence: UInt64, _ text: String) -> FrameResults {
        let pixels = PixelBuffer.allocate(format: .gray8, width: 2, height: 2, colorimetry: .jpeg) { _, _ in }
        let sample = SampleBuffer(sequence: sequence, captureTimeNs: Int64(sequence) * 100_000_000, monotonicCaptureNs: sequence * 100_000_000,
                                  presentationTimeNs: Int64(sequence) * 100_000_000, pixelBuffer: pixels)
        return FrameResults(frame: ProcessedFrame(sample, width: 2, height: 2),
                            lines: [OutputLine(bytes: Array(text.utf8), route: .init(event: "result", source: "a", plugin: "walker"))])
    }

    static func events(_ lines: [OutputLine]) -> [String] { lines.map(\.route.event) }

    static func stage() throws -> TrackedResults? {
        try AnalyticsSettings(track: ["walker"], zones: [], lines: []).stage(plugin: "walker", index: 0, source: "a", live: false, confidence: nil)
    }

    @Test("empty, a frame's lines pass as they are; filled, the stage sees them; replaced, the old stage's closing lines come first in the next frame; emptied, the same")
    func replaced() throws {
        let slot = TrackingSlot(source: "a", plugin: "walker", pluginIndex: 0, live: false, confidence: nil)
        var r = Self.results(0, "r0")
        slot.frame(&r)
        #expect(Self.events(r.lines) == ["result"])
        let first = try #require(try Self.stage())
        slot.replace(with: first)
        #expect(slot.tracked === first)
        r = Self.results(1, "r1")
        slot.frame(&r)
        #expect(Self.events(r.lines) == ["result"])
        // Replaced: the first stage's summary is written before frame 2's result, stamped as its.
        slot.replace(with: try Self.stage())
        slot.replace(with: slot.tracked)  // the same stage again: nothing closed twice
        r = Self.results(2, "r2")
        slot.frame(&r)
        #expect(Self.events(r.lines) == ["analytics.summary", "result"], "\(Self.events(r.lines))")
        // Emptied: the second's summary comes with the next frame; then lines pass as they are.
        slot.replace(with: nil)
        #expect(slot.tracked == nil)
        r = Self.results(3, "r3")
        slot.frame(&r)
        #expect(Self.events(r.lines) == ["analytics.summary", "result"])
        r = Self.results(4, "r4")
        slot.frame(&r)
        #expect(Self.events(r.lines) == ["result"])
    }

    @Test("the input's end: what waits and what the stage still has open, once")
    func finished() throws {
        let slot = TrackingSlot(source: "a", plugin: "walker", pluginIndex: 0, live: false, confidence: nil)
        slot.replace(with: try Self.stage())
        var r = Self.results(0, "r0")
        slot.frame(&r)
        slot.replace(with: try Self.stage())
        var lines: [OutputLine] = []
        slot.finish(&lines, last: r.frame)
        #expect(Self.events(lines) == ["analytics.summary", "analytics.summary"], "\(Self.events(lines))")
        var again: [OutputLine] = []
        slot.finish(&again, last: r.frame)
        // The pending lines went once; the stage now in the slot says its summary again (it is still there).
        #expect(Self.events(again) == ["analytics.summary"])
    }
}
