import CVHostCore
import CVHostLines
import CVHostOutput
import CVHostPlugins
import CVHostV4L2
import Foundation

/// Changes while running, asked for as JSON commands on stdin (`StdinCommands`) or by HTTP
/// (`POST /controls`, `/inputs`): a camera control, a plugin's connection enabled or paused, a
/// plugin's frame-rate cap, inputs added, changed and removed (InputCommands), tracks, zones and
/// lines set and removed (AnalyticsCommands); and the run's end. Every change is a `control.changed` line, so that the
/// record of a run says what was changed, when and by whom; every command is answered by a
/// `command.result` line (on stdin's behalf on stdout, on HTTP's behalf as the response).
///
///     {"command":"set_control","name":"zoom_absolute","value":3[,"source":"cam"]}
///     {"command":"set_plugin","plugin":"barcode","enabled":false[,"source":"cam","plugin_index":0]}
///     {"command":"set_plugin","plugin":"barcode","max_fps":2}          (0: no cap)
///     {"command":"reload","plugin":"brightness"}                      (a Python plugin's code, anew)
///     {"command":"get_controls"}
///     {"command":"add_input","name":"door","input":"rtsp://...","plugins":["detect"]}   (InputCommands)
///     {"command":"change_input","name":"door","input":"rtsp://..."}
///     {"command":"remove_input","name":"door"}
///     {"command":"get_inputs"}
///     {"command":"set_line","name":"door","points":[[100,400],[500,400]]}   (AnalyticsCommands)
///     {"command":"remove_zone","name":"bay"}
///     {"command":"reset_counts"[,"source":"door","line":"gate"|"zone":"bay"]}   (every count, or of one input, line or zone)
///     {"command":"stop"}
///
/// An `"id"` (a string or a number) is echoed in the answer.
package final class LiveCommands: Sendable {
    package enum Origin: String, Sendable {
        /// A fleet's node applies what its site's store says (CVHostFleet): not kept in --state, the store keeps it.
        case stdin, http, fleet
    }

    let inputs: RunInputs
    /// Adds, changes and removes inputs; nil for a run that cannot (the fuzz targets').
    let changes: InputChanges?
    /// The run's tracks, zones and lines; nil for a run that cannot change them.
    let rules: AnalyticsRules?
    /// Their counts, kept and set back to 0 (reset_counts); nil for a run that cannot.
    let counts: TotalsKeeper?
    let lines: RunLines
    private let stop: RunStop

    init(inputs: RunInputs, changes: InputChanges?, rules: AnalyticsRules?, counts: TotalsKeeper?, lines: RunLines, stop: RunStop) {
        self.inputs = inputs
        self.changes = changes
        self.rules = rules
        self.counts = counts
        self.lines = lines
        self.stop = stop
    }

    /// Commands of a run that has no inputs, their lines to `output`: how a command's bytes are
    /// read and refused, away from a run (the fuzz targets, fuzz/targets).
    package convenience init(output: OutputRouter) {
        self.init(inputs: RunInputs([], limit: 0), changes: nil, rules: nil, counts: nil, lines: RunLines(output: output, sources: 0),
                  stop: RunStop(sessions: []))
    }

    private var sources: [SourceRun] { inputs.all }

    /// What a command came to: done (`created`: something was added), or refused and why; and
    /// its `command.result` line. The edge says it: HTTP by a status (RunLiveView), stdin by the line.
    package struct Answer {
        package enum Outcome: Equatable {
            case done(created: Bool)
            case refused(CommandRefusal.Kind)
            /// An error no refusal foresaw (a bug): HTTP 500.
            case failed
        }

        package let outcome: Outcome
        package let line: JSONObject
    }

    /// Carries out one command, given as its JSON object. `command` is implied for HTTP: by the
    /// route (`implied`: POST /inputs is add_input), else for POST /controls set_control with
    /// `name`, set_plugin with `plugin`; `target` is the name in the route (`/inputs/NAME`), which
    /// the body may not contradict.
    package func handle(_ bytes: [UInt8], from origin: Origin, implied: String? = nil, target: String? = nil) -> Answer {
        var id: CommandValue?
        var name = implied ?? "?"
        do {
            let object = try LiveCommand.object(bytes, implied: implied, target: target)
            id = object["id"]
            name = implied ?? object["command"]?.string ?? (origin == .http ? (object["plugin"] != nil ? "set_plugin" : "set_control") : "")
            let (created, result) = try perform(try LiveCommand(name, object), origin: origin)
            return Answer(outcome: .done(created: created), line: Self.answer(name, id: id, ok: true, result: result, error: nil))
        } catch let r as CommandRefusal {
            return Answer(outcome: .refused(r.kind), line: Self.answer(name, id: id, ok: false, result: nil, error: r.message))
        } catch {
            return Answer(outcome: .failed, line: Self.answer(name, id: id, ok: false, result: nil, error: "\(error)"))
        }
    }

    /// One handler a case. - Returns: whether something was added, and the answer's `result`.
    private func perform(_ command: LiveCommand, origin: Origin) throws -> (created: Bool, result: JSONObject) {
        switch command {
        case .setControl(let name, let value, let source): return (false, try setControl(name, to: value, on: source, origin: origin))
        case .setPlugin(let plugins, let enabled, let maxFPS): return (false, try setPlugin(plugins, enabled: enabled, maxFPS: maxFPS, origin: origin))
        case .reload(let plugins): return (false, try reload(plugins))
        case .getControls: return (false, controls())
        case .getInputs(let name): return (false, try inputList(name))
        case .addInput(let spec, let plugins): return (true, try addInput(spec, plugins: plugins, origin: origin))
        case .changeInput(let spec, let plugins): return (false, try changeInput(spec, plugins: plugins, origin: origin))
        case .removeInput(let name): return (false, try removeInput(name, origin: origin))
        case .getAnalytics: return (false, analyticsList())
        case .setRule(let change): return try setAnalytics(change, origin: origin)
        case .removeRule(let kind, let name, let input): return (false, try removeAnalytics(kind, name: name, input: input, origin: origin))
        case .resetCounts(let source, let line, let zone): return (false, try resetCounts(source: source, line: line, zone: zone, origin: origin))
        case .stop:
            stop.request(.requested)
            return (false, JSONObject())
        }
    }

    // MARK: - Commands

    private func setControl(_ name: String, to value: String, on source: String?, origin: Origin) throws -> JSONObject {
        try refuseAfterEnd()
        let cameras = sources.filter { $0.camera != nil }
        let run: SourceRun
        if let wanted = source {
            guard let s = sources.first(where: { $0.id == wanted }) else { throw CommandRefusal(.notFound, "no input named \(wanted)") }
            run = s
        } else {
            guard cameras.count == 1 else {
                throw CommandRefusal(cameras.isEmpty ? .conflict : .invalid,
                              cameras.isEmpty ? "no input is a camera: controls are a camera's" : "several cameras: say which with \"source\"")
            }
            run = cameras[0]
        }
        guard let camera = run.camera else {
            throw CommandRefusal(.conflict, run.device is V4L2AwaitedCamera ? "\(run.id) is not there yet: its controls are set when it comes (--control)"
                                 : "\(run.id) is not a camera: controls are a camera's")
        }
        guard V4L2Controls.id(named: name) != nil else {
            throw CommandRefusal(.notFound, "unknown control '\(name)': known controls are \(V4L2Controls.table.map(\.name).joined(separator: ", "))")
        }
        let report: SettingReport
        do {
            try camera.lockForConfiguration()
        } catch {
            throw CommandRefusal(.conflict, "\(run.id) is being configured (reconnecting?): try again")
        }
        defer { camera.unlockForConfiguration() }
        do {
            report = try camera.setControl(name, to: value)
        } catch let e as CaptureError {
            throw CommandRefusal(.invalid, e.message)
        }
        switch report.status {
        case .unsupported: throw CommandRefusal(.notFound, report.message ?? "\(run.id) has no \(name) control")
        case .failed: throw CommandRefusal(.conflict, report.message ?? "\(name) was not applied")
        case .applied: break
        }
        changed(source: run.id, runner: nil, name: name, requested: value, applied: report.applied, origin: origin)
        var r = JSONObject()
        r.set("source", run.id)
        r.set("name", name)
        r.set("requested", value)
        r.set("applied", report.applied)
        r.set("message", report.message)
        return r
    }

    private func setPlugin(_ plugins: LiveCommand.Plugins, enabled: Bool?, maxFPS: Double?, origin: Origin) throws -> JSONObject {
        try refuseAfterEnd()
        let runners = try matching(plugins)
        for r in runners {
            let connection = r.output.connection
            if let e = enabled {
                connection.isEnabled = e
                changed(source: r.source, runner: r, name: "enabled", requested: String(e), applied: String(connection.isEnabled), origin: origin)
            }
            if let m = maxFPS {
                connection.videoMinFrameDuration = m > 0 ? 1 / m : 0
                changed(source: r.source, runner: r, name: "max_fps", requested: Self.number(m), applied: Self.number(Self.maxFPS(connection)),
                        origin: origin)
            }
        }
        var r = JSONObject()
        r.set("plugins", array: runners.map(Self.pluginState))
        return r
    }

    /// A Python plugin's code started again from its file (PluginReload), on every input or `source`.
    private func reload(_ plugins: LiveCommand.Plugins) throws -> JSONObject {
        try refuseAfterEnd()
        let runners = try matching(plugins)
        guard runners.allSatisfy(\.canReload) else { throw CommandRefusal(.conflict, "plugin \(plugins.plugin) is not a Python plugin: only those are reloaded") }
        for r in runners {
            do { try r.reload() } catch { throw CommandRefusal(.conflict, "\(error.message); the plugin's code as it was goes on") }
        }
        var r = JSONObject()
        r.set("plugins", array: runners.map(Self.pluginState))
        return r
    }

    /// The runners a command names.
    private func matching(_ p: LiveCommand.Plugins) throws -> [PluginRunner] {
        let runners = sources.filter { p.source == nil || $0.id == p.source }.flatMap(\.runners)
            .filter { $0.plugin.name == p.plugin && (p.index == nil || $0.index == p.index) }
        guard !runners.isEmpty else {
            let names = Set(sources.flatMap(\.runners).map(\.plugin.name)).sorted().joined(separator: ", ")
            throw CommandRefusal(.notFound, "no plugin \(p.plugin)\(p.source.map { " on input \($0)" } ?? ""): the run's plugins are \(names)")
        }
        return runners
    }

    /// What can be changed, and its values now: per input, its camera's controls and its plugins.
    func controls() -> JSONObject {
        var o = JSONObject()
        o.set("sources", array: sources.map { s in
            var j = JSONObject()
            j.set("source", s.id)
            if let camera = s.camera {
                j.set("controls", array: camera.controls.map { ControlJSON.make($0, value: camera.value(of: $0)) })
            } else {
                j.set("controls", nil as String?)
            }
            j.set("plugins", array: s.runners.map(Self.pluginState))
            return j
        })
        return o
    }

    // MARK: - Lines

    private func changed(source: String, runner: PluginRunner?, name: String, requested: String, applied: String?, origin: Origin) {
        var e = JSONObject.envelope(event: "control.changed", source: source, plugin: runner?.plugin.name, pluginIndex: runner?.index,
                                    tsNs: HostClock.wallNs())
        e.set("target", runner == nil ? "camera" : "plugin")
        e.set("name", name)
        e.set("requested", requested)
        e.set("applied", applied)
        e.set("by", origin.rawValue)
        lines.writeWhileRunning(e)
    }

    private static func answer(_ command: String, id: CommandValue?, ok: Bool, result: JSONObject?, error: String?) -> JSONObject {
        var e = JSONObject.envelope(event: "command.result", source: nil, tsNs: HostClock.wallNs())
        switch id {
        case .string(let s): e.set("id", s)
        case .number(let n): e.set("id", n, decimals: 6)
        default: e.set("id", nil as String?)
        }
        e.set("command", command)
        e.set("ok", ok)
        if let result { e.set("result", object: result) } else { e.set("result", nil as String?) }
        e.set("error", error)
        return e
    }

    static func pluginState(_ r: PluginRunner) -> JSONObject {
        var j = JSONObject()
        j.set("source", r.source)
        j.set("plugin", r.plugin.name)
        j.set("plugin_index", r.index)
        j.set("enabled", r.output.connection.isEnabled)
        j.set("max_fps", maxFPS(r.output.connection), decimals: 3)
        return j
    }

    private static func maxFPS(_ c: CaptureConnection) -> Double {
        c.videoMinFrameDuration > 0 ? 1 / c.videoMinFrameDuration : 0
    }

    func refuseAfterEnd() throws {
        if inputs.isClosed { throw CommandRefusal(.conflict, "every input has ended: nothing runs to change") }
    }

    static func number(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
    }
}
