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
        case stdin, http
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

    static let known: Set<String> = Set(["command", "id", "source", "name", "value", "plugin", "plugin_index", "enabled", "max_fps", "input",
                                         "device", "plugins", "line", "zone", "label"]).union(AnalyticsJSON.fields)
    static let commands = ["set_control", "set_plugin", "reload", "get_controls", "get_inputs", "add_input", "change_input", "remove_input",
                           "get_analytics", "set_zone", "remove_zone", "set_line", "remove_line", "set_track", "remove_track", "set_mask",
                           "remove_mask", "set_filter", "remove_filter", "reset_counts", "stop"]

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

    /// Carries out one command. - Returns: the HTTP status and the `command.result` line.
    /// `command` is implied for HTTP: by the route (`implied`: POST /inputs is add_input), else for
    /// POST /controls set_control with `name`, set_plugin with `plugin`; `target` is the name in
    /// the route (`/inputs/NAME`), which the body may not contradict.
    package func handle(_ bytes: [UInt8], from origin: Origin, implied: String? = nil, target: String? = nil) -> (status: Int, line: JSONObject) {
        var id: CommandValue?
        var name = implied ?? "?"
        do {
            guard var object = bytes.isEmpty && implied != nil ? [:] : try? JSONDecoder().decode([String: CommandValue].self, from: Data(bytes)) else {
                throw CommandRefusal(400, "a command is one JSON object, e.g. {\"command\":\"set_control\",\"name\":\"brightness\",\"value\":140}")
            }
            id = object["id"]
            if let unknown = object.keys.sorted().first(where: { !Self.known.contains($0) }) {
                throw CommandRefusal(400, "unknown field \"\(unknown)\": a command has \(Self.known.sorted().joined(separator: ", "))")
            }
            if let implied, let given = object["command"]?.string, given != implied {
                throw CommandRefusal(400, "\"command\":\"\(given)\" does not belong here: this route is \(implied)")
            }
            if let target {
                let key = implied.flatMap { c in AnalyticsJSON.Kind.allCases.first { c.hasSuffix("_" + $0.rawValue) } }?.key ?? "name"
                if let given = object[key], given != .string(target) {
                    throw CommandRefusal(400, "\"\(key)\" is \(target), the name in the address: rename by removing and adding")
                }
                object[key] = .string(target)
            }
            let command = implied ?? object["command"]?.string ?? (origin == .http ? (object["plugin"] != nil ? "set_plugin" : "set_control") : "")
            name = command
            var status = 200
            let result: JSONObject
            switch command {
            case "set_control": result = try setControl(object, origin: origin)
            case "set_plugin": result = try setPlugin(object, origin: origin)
            case "reload": result = try reload(object)
            case "get_controls": result = controls()
            case "get_inputs": result = try inputList(object)
            case "add_input":
                result = try addInput(object, origin: origin)
                status = 201
            case "change_input": result = try changeInput(object, origin: origin)
            case "remove_input": result = try removeInput(object, origin: origin)
            case "get_analytics": result = analyticsList()
            case "set_zone", "set_line", "set_track", "set_mask", "set_filter":
                (status, result) = try setAnalytics(AnalyticsJSON.Kind(rawValue: String(command.dropFirst(4)))!, object, origin: origin)
            case "remove_zone", "remove_line", "remove_track", "remove_mask", "remove_filter":
                result = try removeAnalytics(AnalyticsJSON.Kind(rawValue: String(command.dropFirst(7)))!, object, origin: origin)
            case "reset_counts": result = try resetCounts(object, origin: origin)
            case "stop":
                stop.request(.requested)
                result = JSONObject()
            case "": throw CommandRefusal(400, "a command needs \"command\": \(Self.commands.joined(separator: ", "))")
            default: throw CommandRefusal(400, "unknown command \"\(command)\": \(Self.commands.joined(separator: ", "))")
            }
            return (status, Self.answer(name, id: id, ok: true, result: result, error: nil))
        } catch let r as CommandRefusal {
            return (r.status, Self.answer(name, id: id, ok: false, result: nil, error: r.message))
        } catch {
            return (500, Self.answer(name, id: id, ok: false, result: nil, error: "\(error)"))
        }
    }

    // MARK: - Commands

    private func setControl(_ o: [String: CommandValue], origin: Origin) throws -> JSONObject {
        try refuseAfterEnd()
        guard let name = o["name"]?.string else { throw CommandRefusal(400, "set_control needs \"name\" (a control, e.g. brightness)") }
        guard let value = o["value"]?.text else { throw CommandRefusal(400, "set_control needs \"value\" (a number, true/false, or a menu item)") }
        let cameras = sources.filter { $0.camera != nil }
        let run: SourceRun
        if let wanted = o["source"]?.string {
            guard let s = sources.first(where: { $0.id == wanted }) else { throw CommandRefusal(404, "no input named \(wanted)") }
            run = s
        } else {
            guard cameras.count == 1 else {
                throw CommandRefusal(cameras.isEmpty ? 409 : 400,
                              cameras.isEmpty ? "no input is a camera: controls are a camera's" : "several cameras: say which with \"source\"")
            }
            run = cameras[0]
        }
        guard let camera = run.camera else {
            throw CommandRefusal(409, run.device is V4L2AwaitedCamera ? "\(run.id) is not there yet: its controls are set when it comes (--control)"
                                 : "\(run.id) is not a camera: controls are a camera's")
        }
        guard V4L2Controls.id(named: name) != nil else {
            throw CommandRefusal(404, "unknown control '\(name)': known controls are \(V4L2Controls.table.map(\.name).joined(separator: ", "))")
        }
        let report: SettingReport
        do {
            try camera.lockForConfiguration()
        } catch {
            throw CommandRefusal(409, "\(run.id) is being configured (reconnecting?): try again")
        }
        defer { camera.unlockForConfiguration() }
        do {
            report = try camera.setControl(name, to: value)
        } catch let e as CaptureError {
            throw CommandRefusal(400, e.message)
        }
        switch report.status {
        case .unsupported: throw CommandRefusal(404, report.message ?? "\(run.id) has no \(name) control")
        case .failed: throw CommandRefusal(409, report.message ?? "\(name) was not applied")
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

    private func setPlugin(_ o: [String: CommandValue], origin: Origin) throws -> JSONObject {
        try refuseAfterEnd()
        guard let plugin = o["plugin"]?.string else { throw CommandRefusal(400, "set_plugin needs \"plugin\" (its name)") }
        var enabled: Bool?
        if let v = o["enabled"] {
            guard case .bool(let b) = v else { throw CommandRefusal(400, "\"enabled\" is true or false") }
            enabled = b
        }
        var maxFPS: Double?
        if let v = o["max_fps"] {
            guard case .number(let m) = v, m >= 0, m.isFinite else { throw CommandRefusal(400, "\"max_fps\" is a number of frames per second, 0 for no cap") }
            maxFPS = m
        }
        guard enabled != nil || maxFPS != nil else { throw CommandRefusal(400, "set_plugin needs \"enabled\" or \"max_fps\"") }
        let runners = try matching(plugin, o)
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
    private func reload(_ o: [String: CommandValue]) throws -> JSONObject {
        try refuseAfterEnd()
        guard let plugin = o["plugin"]?.string else { throw CommandRefusal(400, "reload needs \"plugin\" (its name)") }
        let runners = try matching(plugin, o)
        guard runners.allSatisfy(\.canReload) else { throw CommandRefusal(409, "plugin \(plugin) is not a Python plugin: only those are reloaded") }
        for r in runners {
            do { try r.reload() } catch { throw CommandRefusal(409, "\(error.message); the plugin's code as it was goes on") }
        }
        var r = JSONObject()
        r.set("plugins", array: runners.map(Self.pluginState))
        return r
    }

    /// The runners of `plugin` on the command's `source` (every input if none) and `plugin_index`.
    private func matching(_ plugin: String, _ o: [String: CommandValue]) throws -> [PluginRunner] {
        let source = o["source"]?.string
        var index: Int?
        if let v = o["plugin_index"] {
            guard case .number(let i) = v, i >= 0, i == i.rounded(), i < 1000 else { throw CommandRefusal(400, "\"plugin_index\" is the plugin's position among the --plugin flags, from 0") }
            index = Int(i)
        }
        let runners = sources.filter { source == nil || $0.id == source }.flatMap(\.runners)
            .filter { $0.plugin.name == plugin && (index == nil || $0.index == index) }
        guard !runners.isEmpty else {
            let names = Set(sources.flatMap(\.runners).map(\.plugin.name)).sorted().joined(separator: ", ")
            throw CommandRefusal(404, "no plugin \(plugin)\(source.map { " on input \($0)" } ?? ""): the run's plugins are \(names)")
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
        if inputs.isClosed { throw CommandRefusal(409, "every input has ended: nothing runs to change") }
    }

    static func number(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
    }
}

/// A value in a command, as JSON has it (true is not 1, "3" is not 3).
enum CommandValue: Decodable, Equatable {
    case string(String), bool(Bool), number(Double), strings([String]), numbers([Double]), points([[Double]]), other

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let d = try? c.decode(Double.self) {
            self = .number(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let list = try? c.decode([String].self) {
            self = .strings(list)
        } else if let list = try? c.decode([Double].self) {
            self = .numbers(list)
        } else if let points = try? c.decode([[Double]].self), points.allSatisfy({ $0.count == 2 }) {
            self = .points(points)
        } else {
            self = .other
        }
    }

    var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// As a camera's control takes it: a string as it is, true/false, a number.
    var text: String? {
        switch self {
        case .string(let s): s
        case .bool(let b): b ? "true" : "false"
        case .number(let d): LiveCommands.number(d)
        case .strings, .numbers, .points, .other: nil
        }
    }
}
