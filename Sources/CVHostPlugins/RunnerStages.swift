import CVHostCore
import CVHostLines

/// What one runner hands each frame's results to, once they are in frame order: its stages (the
/// rooms of the run that subscribe: the analytics, the evidence, the live view), in the order
/// they were added, then the sink. It also keeps what they are told with the next frame: the
/// frames passed over (the plugin's frame-rate cap) since the last one processed, and that last
/// one (for the lines that close the input).
final class RunnerStages: Sendable {
    private struct State {
        var stages: [FrameStage] = []
        var passedOver: [ProcessedFrame] = []
        var last: ProcessedFrame?
    }
    private let state = Locked(State())
    private let sink: OutputSink

    /// Frames passed over kept at most while the plugin is behind (FrameResults.mostPassedOver),
    /// and the newest of them that keep their pictures (what a snapshot of an event between two
    /// processed frames needs: at 30 fps and `max_fps=1`, every one).
    static let mostPassedOver = FrameResults.mostPassedOver
    static let mostPassedOverPictures = 32

    init(first: FrameStage?, sink: OutputSink) {
        self.sink = sink
        if let first { state.withLock { $0.stages = [first] } }
    }

    var stages: [FrameStage] { state.withLock { $0.stages } }

    /// Adds a stage after those there (before the input's session starts).
    func add(_ stage: FrameStage) {
        state.withLock { $0.stages.append(stage) }
    }

    /// A frame the plugin will not be given (its frame-rate cap): told on the capture thread, in
    /// frame order, before any later frame's results come to `write`.
    func passedOver(_ sample: SampleBuffer, width: Int, height: Int, orientation: VideoOrientation = .identity) {
        state.withLock { s in
            guard !s.stages.isEmpty else { return }
            let pictures = s.stages.contains { $0.needsPassedOverPictures }
            if s.passedOver.count >= Self.mostPassedOver { s.passedOver.removeFirst() }
            s.passedOver.append(ProcessedFrame(sample, width: width, height: height, orientation: orientation, keepPicture: pictures))
            let old = s.passedOver.count - 1 - Self.mostPassedOverPictures
            if pictures, old >= 0, s.passedOver[old].sample != nil { s.passedOver[old] = s.passedOver[old].withoutPicture }
        }
    }

    /// One frame's lines, in frame order (the sequencer's): through every stage, then written.
    func write(_ lines: [OutputLine], frame: ProcessedFrame?, succeeded: Bool) {
        guard let frame else { return lines.forEach { sink.write($0) } }
        let (stages, between) = state.withLock { s -> ([FrameStage], [ProcessedFrame]) in
            let before = s.passedOver.prefix { $0.sequence < frame.sequence }
            s.passedOver.removeFirst(before.count)
            // The last frame's picture only for a stage that takes pictures later (one frame of each
            // input and plugin held for the life of the run is memory: 3 MB a 1080p camera).
            s.last = s.stages.contains { $0.needsPassedOverPictures } ? frame : frame.withoutPicture
            return (s.stages, Array(before))
        }
        var results = FrameResults(frame: frame, passedOver: between, lines: lines, succeeded: succeeded)
        for stage in stages { stage.frame(&results) }
        results.lines.forEach { sink.write($0) }
    }

    /// After the input's last frame and its flush: what the stages still have open, written.
    func finish() {
        let (stages, last) = state.withLock { s -> ([FrameStage], ProcessedFrame?) in
            s.passedOver = []
            return (s.stages, s.last)
        }
        var lines: [OutputLine] = []
        for stage in stages { stage.finish(&lines, last: last) }
        lines.forEach { sink.write($0) }
    }
}
