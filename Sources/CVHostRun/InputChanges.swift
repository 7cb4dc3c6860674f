import CVHostCore
import CVHostLines
import CVHostPlugins

/// Inputs added, changed and removed while the run goes on (`POST /inputs`, `PUT` and `DELETE
/// /inputs/NAME`, `add_input`, `change_input` and `remove_input` on stdin, a reload of the config
/// file). Each input has its own session, thread and runners, so the others never pause, lose a
/// frame or change session: an added input gets the run's plugins (or those named for it) and its
/// own `session.started`; a removed one ends with its final metrics and `session.stopped` (reason
/// `removed`); a changed one is a removal and an add under one name, the new one opened first
/// (one that cannot be opened leaves the old one running).
final class InputChanges: Sendable {
    private let settings: RunSettings
    private let inputs: RunInputs
    private let plugins: PluginStage
    private let outputs: OutputStage
    private let stop: RunStop
    private let rules: AnalyticsRules

    init(_ settings: RunSettings, inputs: RunInputs, plugins: PluginStage, outputs: OutputStage, stop: RunStop, rules: AnalyticsRules) {
        self.settings = settings
        self.inputs = inputs
        self.plugins = plugins
        self.outputs = outputs
        self.stop = stop
        self.rules = rules
    }

    /// Opens and starts an input, in place of `replacing` when it changes one (same name).
    /// - Parameter plugins: names among the run's plugins; nil: all of them.
    /// - Throws: conflict (the name taken, the input limit, the run ending), unprocessable (it cannot be opened: the
    ///   opener's error; a plugin the run does not have).
    @discardableResult
    func add(_ spec: InputSpec, plugins names: [String]?, by origin: String, replacing: SourceRun? = nil) throws(CommandRefusal) -> SourceRun {
        let id = spec.sourceID()
        try inputs.reserve(id, replacing: replacing)
        let runners: [PluginRunner]
        let opened: (CaptureDevice, [SettingReport])
        do {
            runners = try plugins.makeRunners(for: id, named: names, live: spec.canReconnect)
        } catch {
            inputs.release(id)
            throw error
        }
        // Until the input is added: what was made for it let go, its name free again.
        let undo = { [inputs, plugins, rules] in
            inputs.release(id)
            _ = plugins.discard(runners)
            rules.forget(runners)
        }
        do {
            opened = try InputStage.open(spec, settings: settings, firstCamera: nil, onSkip: { [lines = outputs.lines] path, reason in
                Log.warning("skipped \(path): \(reason)", source: id)
                lines.write(SessionEventLines.inputSkipped(source: id, path: path, reason: reason))
            })
        } catch {
            undo()
            throw unopened(id, error, by: origin)
        }
        // The new input opened: the old one of that name ends now (its final lines), then the new one starts.
        if let replacing {
            do {
                try removeNow(replacing, by: origin)
            } catch {
                undo()
                throw error
            }
            rules.carry(from: replacing.runners, to: runners)
        }
        let session = CaptureSession()
        let source: SourceRun
        do {
            source = try SourceRun(id: id, spec: spec, device: opened.0, session: session, runners: runners, lines: outputs.lines, deviceSettings: opened.1,
                                   frameLimit: settings.maxFrames, tagLogs: true, evidence: outputs.evidence, motion: settings.motion(on: id))
        } catch {
            undo()
            throw unopened(id, error, by: origin)
        }
        guard outputs.lines.opened() else {
            undo()
            throw CommandRefusal(.conflict, "the run is ending: no input can be added")
        }
        stop.add(session)
        outputs.liveView?.add(source)
        outputs.lines.write(SessionEventLines.inputAdded(source: id, spec: spec, plugins: runners, by: origin))
        guard inputs.insert(source, replacing: nil) else {
            source.report.abandon(reason: .requested, framesCaptured: 0)
            finishRemoval(source)
            throw CommandRefusal(.conflict, "the run is ending: no input can be added")
        }
        do {
            try session.startRunning()
            stop.started(session)
        } catch {
            Log.error((error as? CaptureError)?.message ?? "\(error)", source: id)
            source.report.abandon(reason: .error, framesCaptured: 0)
            finishRemoval(source)
            throw unopened(id, error, by: origin)
        }
        Log.info("input \(id) added (\(runners.map(\.output.label).joined(separator: ", ")))", source: id)
        return source
    }

    /// Ends the input called `id` (its final metrics and session.stopped, reason `removed`) and
    /// destroys its plugins' instances, once its session has stopped.
    /// - Throws: notFound (no such input), conflict (it is being removed already).
    func remove(_ id: String, by origin: String) throws(CommandRefusal) {
        guard let source = inputs.named(id) else { throw CommandRefusal(.notFound, "no input named \(id): \(names)") }
        try removeNow(source, by: origin)
    }

    /// Refuses (forbidden) an input an HTTP client may not name (`--allow-inputs`): before it is opened
    /// or looked up, so that the refusal tells nothing of what is there.
    func allow(_ spec: InputSpec, by origin: LiveCommands.Origin) throws(CommandRefusal) {
        guard origin == .http, let why = (settings.liveView?.allowInputs ?? .standard).refusal(spec) else { return }
        throw CommandRefusal(.forbidden, why)
    }

    /// Where changes made while running are kept (--state), if anywhere.
    var state: RunStateFile? { settings.state }

    /// An input that could not be opened or started: unprocessable, with the opener's own error. Over HTTP
    /// with no token (any local user, any page: loopback), the answer does not say why: "not
    /// found", "permission denied" and "connection refused" would tell such a client which files
    /// and ports there are; the reason goes to stderr, the operator's.
    private func unopened(_ id: String, _ error: Error, by origin: String) -> CommandRefusal {
        let why = (error as? CaptureError)?.message ?? "\(error)"
        guard origin == LiveCommands.Origin.http.rawValue, settings.liveView?.token == nil else { return CommandRefusal(.unprocessable, "\(id): " + why) }
        Log.warning("an input added over HTTP cannot be opened: \(why)", source: id)
        return CommandRefusal(.unprocessable, "\(id): it cannot be opened (why is on cvhost's stderr; with a token, --http-token-file, the answer says)")
    }

    /// The run's plugins' names, in the order of the --plugin flags.
    var pluginNames: [String] { plugins.found.map(\.plugin.name) }

    /// The inputs' names now, for a refusal that needs them.
    var names: String {
        let all = inputs.all.map(\.id)
        return all.isEmpty ? "the run has no input" : "the run's inputs are \(all.joined(separator: ", "))"
    }

    private func removeNow(_ source: SourceRun, by origin: String) throws(CommandRefusal) {
        guard inputs.beginRemoving(source) else { throw CommandRefusal(.conflict, "\(source.id) is being removed already") }
        outputs.lines.write(SessionEventLines.inputRemoved(source: source.id, by: origin))
        source.session.requestStop(reason: .removed)
        // Its plugins finish the frames they were given (a plugin that hangs ends the run, as at any stop: HungPluginStop).
        source.session.waitUntilStopped()
        finishRemoval(source)
        Log.info("input \(source.id) removed", source: source.id)
    }

    /// Lets go of everything of an input whose session has stopped (or never started).
    private func finishRemoval(_ source: SourceRun) {
        _ = plugins.discard(source.runners)
        rules.forget(source.runners)
        outputs.liveView?.remove(source)
        stop.remove(source.session)
        inputs.remove(source)
        source.session.eventHandler = nil
    }
}
