import CVHostCore
import CVHostLines

/// `--oneshot`: the run stops at the first frame with a result, as `zbarcam -1` does. The plugins'
/// lines pass through here on their way to the outputs: the first result asks the run to stop,
/// and results of any other frame (frames already under way in other plugins or inputs) are
/// held back, so that the output is that one frame's results and the final lines.
final class OneShotGate: OutputSink, Sendable {
    private let output: OutputSink
    private let stop: RunStop
    /// The input and sequence of the frame whose results are written.
    private let chosen = Locked<(source: String?, sequence: UInt64?)?>(nil)

    init(output: OutputSink, stop: RunStop) {
        self.output = output
        self.stop = stop
    }

    func write(_ line: OutputLine) {
        guard line.route.event == "result" else { return output.write(line) }
        let frame = (source: line.route.source, sequence: line.sequence)
        let (pass, first) = chosen.withLock { chosen -> (Bool, Bool) in
            guard let chosen else {
                chosen = frame
                return (true, true)
            }
            return (chosen.source == frame.source && chosen.sequence == frame.sequence, false)
        }
        if pass { output.write(line) }
        if first { stop.request(.firstResult) }
    }
}
