import CVHostCore
import CVHostEvents
import CVHostEvidence
import CVHostLines
import CVHostOutput

/// The run's first stage: every `--output` opened (a file that cannot be opened, a required broker
/// that does not answer, ends the run before anything starts), the live view's event stream
/// tapping them, and the lines of the run's inputs. Closing it delivers what waits.
final class OutputStage: Sendable {
    let output: OutputRouter
    let lines: RunLines
    /// `--http`'s live view: its events tap the outputs from the start; it listens once the inputs are open.
    let liveView: RunLiveView?
    /// Where the plugins' lines go: the outputs, or with --oneshot the gate that stops the run at the first result.
    let pluginSink: OutputSink
    /// `--snapshots`, `--clips`: every runner hands it its frames' results (SourceRun), and it
    /// writes clip.saved to the outputs.
    let evidence: Evidence?
    /// `--events-db`: the events worth looking back at, written as the outputs get them.
    let events: EventRecorder?

    /// - Throws: exit 5 naming the output that cannot be opened or reached, or an evidence folder that cannot be used.
    init(_ s: RunSettings, resultsDescriptor: Int32, sources: Int, stop: RunStop) throws {
        liveView = s.liveView.map { RunLiveView(options: $0) }
        var room: Evidence?
        if s.snapshots != nil || s.clips != nil {
            do {
                room = try Evidence(snapshots: s.snapshots, clips: s.clips, defaultEvents: s.defaultEvidenceEvents)
            } catch {
                throw fail(error.description, code: ExitCodes.outputUnavailable)
            }
        }
        evidence = room
        if let path = s.eventsDatabase {
            do throws(EventStore.OpenError) {
                events = EventRecorder(store: try EventStore(path: path, said: { Log.warning($0) }))
            } catch {
                throw fail(error.description, code: ExitCodes.outputUnavailable)
            }
        } else {
            events = nil
        }
        // A stdout reader that went away ends the run quietly; lost lines end it with exit 4 (RunOutput.finish).
        // (The stop, weakly: it holds stdout in turn, through its listener below.)
        output = try RunOutput.open(s.outputs, stdoutDescriptor: resultsDescriptor, connectTimeout: s.openTimeout,
                                    taps: (liveView.map { [$0.events] } ?? []) + (events.map { [$0] } ?? []), stdoutSelection: s.stdoutSelection,
                                    onStdoutClosed: { [weak stop] in stop?.request(.outputClosed) },
                                    onRequiredFailed: { [weak stop] in stop?.request(.outputFailed) })
        room?.connect(output)
        lines = RunLines(output: output, sources: sources)
        pluginSink = s.oneshot ? OneShotGate(output: output, stop: stop) : output
        // Stopping, a reader of stdout that has stopped reading has 5 s more; then its lines are
        // dropped (counted; exit 4) and the run ends.
        stop.whenRequested { [stdout = output.stdout] in stdout?.giveUp(atNs: HostClock.monotonicNs() + Self.stalledReaderGraceNs) }
    }

    /// How long a stopping run waits for a stdout reader that has stopped reading.
    static let stalledReaderGraceNs: UInt64 = 5_000_000_000

    /// The outputs deliver what was written (each for at most its drain= seconds; at the normal
    /// end RunOutput.finish has done so already, and this returns its answer).
    func close() {
        // Every way a run ends: the evidence room's last clips and snapshots first.
        evidence?.finish()
        _ = output.finish()
        // The last lines (clip.saved among them) are the store's too.
        events?.finish()
    }
}
