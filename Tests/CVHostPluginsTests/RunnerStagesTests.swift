import CVHostCore
import CVHostLines
import Testing
@testable import CVHostPlugins

/// What a runner hands its stages: each frame with its results and the frames passed over before
/// it, in the order the stages subscribed, then the lines written.
@Suite("RunnerStages: a frame's results handed on with their frame")
struct RunnerStagesTests {
    final class Lines: OutputSink, @unchecked Sendable {
        let written = Locked<[String]>([])
        func write(_ line: OutputLine) { written.withLock { $0.append(String(decoding: line.bytes, as: UTF8.self)) } }
    }

    /// A stage that says what it was handed and adds a line of its own after the frame's.
    final class Recorder: FrameStage, @unchecked Sendable {
        let name: String
        let needsPassedOverPictures: Bool
        let seen = Locked<[(frame: UInt64, passedOver: [UInt64], pictures: Int, lines: [String])]>([])
        let closed = Locked<[UInt64?]>([])

        init(_ name: String, pictures: Bool = false) {
            self.name = name
            needsPassedOverPictures = pictures
        }

        func frame(_ results: inout FrameResults) {
            seen.withLock {
                $0.append((results.frame.sequence, results.passedOver.map(\.sequence), results.passedOver.filter { $0.sample != nil }.count,
                           results.lines.map { String(decoding: $0.bytes, as: UTF8.self) }))
            }
            results.lines.append(RunnerStagesTests.line("\(name)@\(results.frame.sequence)"))
        }

        func finish(_ lines: inout [OutputLine], last: ProcessedFrame?) {
            closed.withLock { $0.append(last?.sequence) }
            lines.append(RunnerStagesTests.line("\(name) closed"))
        }
    }

    static func line(_ text: String) -> OutputLine {
        OutputLine(bytes: Array(text.utf8), route: .init(event: "result", source: nil, plugin: nil))
    }

    static func sample(_ sequence: UInt64) -> SampleBuffer {
        let pixels = PixelBuffer.allocate(format: .gray8, width: 2, height: 2, colorimetry: .jpeg) { _, _ in }
        return SampleBuffer(sequence: sequence, captureTimeNs: Int64(sequence), monotonicCaptureNs: sequence, presentationTimeNs: Int64(sequence) * 1000,
                            pixelBuffer: pixels)
    }

    static func frame(_ sequence: UInt64) -> ProcessedFrame { ProcessedFrame(sample(sequence), width: 2, height: 2) }

    @Test("each stage sees the frame's lines with what the stages before it added, in the order they subscribed; then the lines are written")
    func inOrder() {
        let out = Lines(), first = Recorder("analytics"), second = Recorder("evidence")
        let stages = RunnerStages(first: first, sink: out)
        stages.add(second)
        stages.write([Self.line("r0")], frame: Self.frame(0), succeeded: true)
        #expect(second.seen.withLock { $0.first?.lines } == ["r0", "analytics@0"])
        #expect(out.written.withLock { $0 } == ["r0", "analytics@0", "evidence@0"])
        // Lines of no frame (none was processed) are written as they are.
        stages.write([Self.line("alone")], frame: nil, succeeded: false)
        #expect(out.written.withLock { $0 }.last == "alone")
        #expect(first.seen.withLock { $0.count } == 1)
    }

    @Test("the frames passed over go with the next frame processed, oldest first; a later one waits for its own")
    func passedOver() {
        let out = Lines(), stage = Recorder("analytics")
        let stages = RunnerStages(first: stage, sink: out)
        for s: UInt64 in [1, 2, 3, 7] { stages.passedOver(Self.sample(s), width: 2, height: 2) }
        stages.write([], frame: Self.frame(4), succeeded: true)
        stages.write([], frame: Self.frame(8), succeeded: true)
        let seen = stage.seen.withLock { $0 }
        #expect(seen.map(\.passedOver) == [[1, 2, 3], [7]])
        // No stage asked for their pictures: they carry their time alone.
        #expect(seen.map(\.pictures) == [0, 0])
    }

    @Test("a stage that needs them gets the pictures of the newest frames passed over, no more than mostPassedOverPictures; at most mostPassedOver frames wait")
    func pictures() throws {
        let out = Lines(), stage = Recorder("evidence", pictures: true)
        let stages = RunnerStages(first: nil, sink: out)
        stages.add(stage)
        let n = RunnerStages.mostPassedOver + 10
        for s in 0..<UInt64(n) { stages.passedOver(Self.sample(s), width: 2, height: 2) }
        stages.write([], frame: Self.frame(UInt64(n)), succeeded: true)
        let seen = try #require(stage.seen.withLock { $0.first })
        #expect(seen.passedOver.count == RunnerStages.mostPassedOver && seen.passedOver.first == 10 && seen.passedOver.last == UInt64(n - 1))
        #expect(seen.pictures == RunnerStages.mostPassedOverPictures)
    }

    @Test("with no stage, frames passed over are not kept; finish hands every stage the last frame processed and writes what they close")
    func finish() {
        let out = Lines()
        let bare = RunnerStages(first: nil, sink: out)
        bare.passedOver(Self.sample(0), width: 2, height: 2)
        let late = Recorder("late")
        bare.add(late)
        bare.write([], frame: Self.frame(1), succeeded: true)
        #expect(late.seen.withLock { $0.first?.passedOver } == [])
        bare.finish()
        #expect(late.closed.withLock { $0 } == [1])
        #expect(out.written.withLock { $0 }.suffix(1) == ["late closed"])
    }
}
