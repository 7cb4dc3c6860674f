import CVHostCore
import CVHostEvidence
import CVHostPlugins
import CVHostSources
import CVHostV4L2

/// The run's third stage: every input opened (a file, images, a stream, a camera set up as asked)
/// and joined to its session and its plugins. One that cannot be opened ends the run before any
/// starts (exit 3). Nothing runs yet: the sessions start in `RunningSession`.
///
/// It has no `close`, unlike the other stages: what an opened input holds (a camera's descriptor,
/// a file's or stream's demuxer) belongs to its device and is closed when the device goes (their
/// deinit), which is when the stage is let go, opened or not; a started session stops its stream
/// when `RunningSession` ends it.
struct InputStage: Sendable {
    let sources: [SourceRun]

    /// - Throws: exit 3 naming the input that cannot be opened.
    init(_ s: RunSettings, sourceIDs ids: [String], sessions: [CaptureSession], firstCamera: V4L2NodeInfo?,
         runners: [[PluginRunner]], lines: RunLines, evidence: Evidence? = nil) throws {
        var sources: [SourceRun] = []
        for (i, spec) in s.inputs.enumerated() {
            let id = ids[i]
            do {
                let (device, settings) = try Self.open(spec, settings: s, firstCamera: firstCamera, onSkip: { path, reason in
                    Log.warning("skipped \(path): \(reason)")
                    lines.write(SessionEventLines.inputSkipped(source: id, path: path, reason: reason))
                })
                // A camera down at start, with --reconnect: it starts interrupted; the others run.
                if let why = (device as? NetworkStreamDevice)?.unreachableAtStart {
                    Log.warning("\(why): --reconnect tries again while the run's other inputs go on", source: s.inputs.count > 1 ? id : nil)
                }
                if let awaited = device as? V4L2AwaitedCamera {
                    Log.warning("\(awaited.why): --reconnect waits for it while the run's other inputs go on", source: s.inputs.count > 1 ? id : nil)
                }
                sources.append(try SourceRun(id: id, spec: spec, device: device, session: sessions[i], runners: runners[i], lines: lines,
                                             deviceSettings: settings, frameLimit: s.maxFrames, tagLogs: s.inputs.count > 1,
                                             evidence: evidence, motion: s.motion(on: id)))
            } catch let error as CaptureError {
                throw fail((spec.name.map { "\($0): " + error.message } ?? error.message) + Self.keptBy(s.state, id: id), code: ExitCodes.inputUnavailable)
            } catch {
                throw fail("\(error)", code: ExitCodes.internalError)
            }
        }
        self.sources = sources
    }

    /// What brought an input that cannot be opened, when a change made while an earlier run went
    /// on (kept by --state) did, and how to start without it: said with exit 3, so that a restart
    /// that fails for an earlier change says which change.
    static func keptBy(_ state: RunStateFile?, id: String) -> String {
        guard let state, case .some(.some) = state.current.inputs[id] else { return "" }
        return " (input \(id) was added or changed while cvhost ran and is kept by --state \(state.path): drop its entry \"\(id)\" "
            + "under \"inputs\" there, or start with --reconnect, which runs the other inputs and tries this one again)"
    }
}
