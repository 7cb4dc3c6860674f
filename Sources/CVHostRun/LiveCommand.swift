import CVHostAnalytics
import CVHostCore
import Foundation

/// One command to a running cvhost, read from its JSON (a line on stdin, or an HTTP route and its
/// body) into what it asks, typed: every field it needs there and of its type, or refused as
/// `invalid` naming the field. LiveCommands carries each case out. The commands' names (stdin's
/// `"command"`, the routes HTTPRouter turns into them) and fields are the contract.
enum LiveCommand {
    /// The runners a command names: a plugin by name, on one input or every one (`source`), one of
    /// several of that name (`index`, its place among the --plugin flags).
    struct Plugins: Equatable {
        let plugin: String
        let source: String?
        let index: Int?
    }

    case setControl(name: String, value: String, source: String?)
    case setPlugin(Plugins, enabled: Bool?, maxFPS: Double?)
    case reload(Plugins)
    case getControls
    case getInputs(name: String?)
    case addInput(InputSpec, plugins: [String]?)
    case changeInput(InputSpec, plugins: [String]?)
    case removeInput(name: String)
    case getAnalytics
    /// A zone, line, track, mask or filter set (`change` holds it, checked).
    case setRule(AnalyticsRules.Change)
    /// One removed; a label's filters: of `input`, or every one of that label.
    case removeRule(RuleKind, name: String, input: String?)
    case resetCounts(source: String?, line: String?, zone: String?)
    case stop

    static let names = ["set_control", "set_plugin", "reload", "get_controls", "get_inputs", "add_input", "change_input", "remove_input",
                        "get_analytics", "set_zone", "remove_zone", "set_line", "remove_line", "set_track", "remove_track", "set_mask",
                        "remove_mask", "set_filter", "remove_filter", "reset_counts", "stop"]

    /// Every field a command may have.
    static let fields: Set<String> = Set(["command", "id", "source", "name", "value", "plugin", "plugin_index", "enabled", "max_fps", "input",
                                          "device", "record", "plugins", "line", "zone", "label"]).union(RuleKind.fields)

    /// A command's JSON object read: the fields known, the route's command and name (`implied`,
    /// `target`) put in, and the command's name.
    /// - Throws: invalid: not one JSON object, an unknown field, a command or name the route contradicts.
    static func object(_ bytes: [UInt8], implied: String?, target: String?) throws(CommandRefusal) -> [String: CommandValue] {
        guard var object = bytes.isEmpty && implied != nil ? [:] : try? JSONDecoder().decode([String: CommandValue].self, from: Data(bytes)) else {
            throw CommandRefusal(.invalid, "a command is one JSON object, e.g. {\"command\":\"set_control\",\"name\":\"brightness\",\"value\":140}")
        }
        if let unknown = object.keys.sorted().first(where: { !fields.contains($0) }) {
            throw CommandRefusal(.invalid, "unknown field \"\(unknown)\": a command has \(fields.sorted().joined(separator: ", "))")
        }
        if let implied, let given = object["command"]?.string, given != implied {
            throw CommandRefusal(.invalid, "\"command\":\"\(given)\" does not belong here: this route is \(implied)")
        }
        if let target {
            let key = implied.flatMap { c in RuleKind.allCases.first { c.hasSuffix("_" + $0.rawValue) } }?.key ?? "name"
            if let given = object[key], given != .string(target) {
                throw CommandRefusal(.invalid, "\"\(key)\" is \(target), the name in the address: rename by removing and adding")
            }
            object[key] = .string(target)
        }
        return object
    }

    /// The command `name` asks with the fields of `o`.
    /// - Throws: invalid: an unknown command, a field it needs missing or of the wrong type.
    init(_ name: String, _ o: [String: CommandValue]) throws(CommandRefusal) {
        switch name {
        case "set_control":
            guard let control = o["name"]?.string else { throw CommandRefusal(.invalid, "set_control needs \"name\" (a control, e.g. brightness)") }
            guard let value = o["value"]?.text else { throw CommandRefusal(.invalid, "set_control needs \"value\" (a number, true/false, or a menu item)") }
            self = .setControl(name: control, value: value, source: o["source"]?.string)
        case "set_plugin":
            let plugins = try Self.plugins(name, o)
            var enabled: Bool?
            if let v = o["enabled"] {
                guard case .bool(let b) = v else { throw CommandRefusal(.invalid, "\"enabled\" is true or false") }
                enabled = b
            }
            var maxFPS: Double?
            if let v = o["max_fps"] {
                guard case .number(let m) = v, m >= 0, m.isFinite else { throw CommandRefusal(.invalid, "\"max_fps\" is a number of frames per second, 0 for no cap") }
                maxFPS = m
            }
            guard enabled != nil || maxFPS != nil else { throw CommandRefusal(.invalid, "set_plugin needs \"enabled\" or \"max_fps\"") }
            self = .setPlugin(plugins, enabled: enabled, maxFPS: maxFPS)
        case "reload": self = .reload(try Self.plugins(name, o))
        case "get_controls": self = .getControls
        case "get_inputs": self = .getInputs(name: o["name"]?.string)
        case "add_input":
            let (spec, plugins) = try Self.input(o, nameRequired: false)
            self = .addInput(spec, plugins: plugins)
        case "change_input":
            let (spec, plugins) = try Self.input(o, nameRequired: true)
            self = .changeInput(spec, plugins: plugins)
        case "remove_input":
            guard let input = o["name"]?.string else { throw CommandRefusal(.invalid, "remove_input needs \"name\" (the input's name)") }
            self = .removeInput(name: input)
        case "get_analytics": self = .getAnalytics
        case "reset_counts":
            let line = o["line"]?.string, zone = o["zone"]?.string
            if line != nil && zone != nil { throw CommandRefusal(.invalid, "reset_counts sets back one line or one zone (or, with neither, every one)") }
            self = .resetCounts(source: o["source"]?.string, line: line, zone: zone)
        case "stop": self = .stop
        case "": throw CommandRefusal(.invalid, "a command needs \"command\": \(Self.names.joined(separator: ", "))")
        default:
            if let kind = RuleKind(rawValue: String(name.drop { $0 != "_" }.dropFirst())), name == "set_" + kind.rawValue || name == "remove_" + kind.rawValue {
                self = try Self.rule(kind, sets: name.hasPrefix("set_"), o)
            } else {
                throw CommandRefusal(.invalid, "unknown command \"\(name)\": \(Self.names.joined(separator: ", "))")
            }
        }
    }

    /// set_plugin's and reload's runners.
    private static func plugins(_ command: String, _ o: [String: CommandValue]) throws(CommandRefusal) -> Plugins {
        guard let plugin = o["plugin"]?.string else { throw CommandRefusal(.invalid, "\(command) needs \"plugin\" (its name)") }
        var index: Int?
        if let v = o["plugin_index"] {
            guard case .number(let i) = v, i >= 0, i == i.rounded(), i < 1000 else {
                throw CommandRefusal(.invalid, "\"plugin_index\" is the plugin's position among the --plugin flags, from 0")
            }
            index = Int(i)
        }
        return Plugins(plugin: plugin, source: o["source"]?.string, index: index)
    }

    /// An input as a command gives it: `input` or `device`, its name, and the plugins named for it.
    private static func input(_ o: [String: CommandValue], nameRequired: Bool) throws(CommandRefusal) -> (InputSpec, [String]?) {
        let text: InputSpec.Kind
        switch (o["input"], o["device"]) {
        case (.string(var t)?, nil) where !t.isEmpty:
            guard t != "-" else { throw CommandRefusal(.invalid, "\"input\":\"-\" (standard input) cannot be added while running: stdin carries the commands") }
            if let v = o["record"] {
                guard case .string(let r) = v, !r.isEmpty, InputSpec.streams(t).record == nil else {
                    throw CommandRefusal(.invalid, "\"record\" is the camera's stream to record clips from, a URL string (or ,record=URL in \"input\", not both)")
                }
                t += InputSpec.recordPart + r
            }
            if let why = InputSpec.problem(t) { throw CommandRefusal(.invalid, why) }
            text = .input(t)
        case (nil, .string(let d)?) where !d.isEmpty: text = .camera(d)
        case (nil, nil): throw CommandRefusal(.invalid, "an input needs \"input\" (a file, a URL, testsrc: what --input takes) or \"device\" (a camera's path)")
        default: throw CommandRefusal(.invalid, "give one of \"input\" (a string: what --input takes) or \"device\" (a string: a camera's path)")
        }
        var name: String?
        if let v = o["name"] {
            guard case .string(let n) = v, InputSpec.isName(n) else {
                throw CommandRefusal(.invalid, "\"name\" is 1 to 64 letters, digits, _, - or . (as in --input NAME=...)")
            }
            name = n
        } else if nameRequired {
            throw CommandRefusal(.invalid, "this command needs \"name\" (the input's name)")
        }
        var plugins: [String]?
        switch o["plugins"] {
        case nil: break
        case .strings(let list)?:
            guard !list.isEmpty else { throw CommandRefusal(.invalid, "\"plugins\" names at least one of the run's plugins (leave it out for all of them)") }
            plugins = list
        default: throw CommandRefusal(.invalid, "\"plugins\" is a list of the run's plugins' names, e.g. [\"detect\"]")
        }
        return (InputSpec(kind: text, name: name), plugins)
    }

    /// set_zone ... remove_filter: the rule in its one JSON shape (RuleCoding), checked as --zone's text is.
    private static func rule(_ kind: RuleKind, sets: Bool, _ o: [String: CommandValue]) throws(CommandRefusal) -> LiveCommand {
        let command = (sets ? "set_" : "remove_") + kind.rawValue
        guard let name = o[kind.key]?.string, !name.isEmpty else { throw CommandRefusal(.invalid, "\(command) needs \"\(kind.key)\"") }
        guard sets else { return .removeRule(kind, name: name, input: o["input"]?.string) }
        do {
            let fields = try ruleFields(kind, name: name, o)
            return switch kind {
            case .zone: .setRule(.zone(name: name, try AnalyticsSpec.zone(fields)))
            case .line: .setRule(.line(name: name, try AnalyticsSpec.line(fields)))
            case .track: .setRule(.track(plugin: name, try AnalyticsSpec.tracked(fields)))
            case .mask: .setRule(.mask(name: name, try AnalyticsSpec.mask(fields)))
            case .filter: .setRule(.filter(label: name, input: o["input"]?.string, try AnalyticsSpec.filter(fields)))
            }
        } catch {
            throw CommandRefusal(.invalid, error.description)
        }
    }

    /// A command's body as a rule's fields: the fields of rules, each as JSON gave it; the
    /// command's own (`command`, `id`) left out.
    private static func ruleFields(_ kind: RuleKind, name: String, _ o: [String: CommandValue]) throws(AnalyticsSpec.Problem) -> RuleFields {
        var points: [Point]?
        var options: [(key: String, value: RuleFields.Value)] = []
        for (key, v) in o.sorted(by: { $0.key < $1.key }) where RuleKind.fields.contains(key) {
            switch (key, v) {
            case ("points", .points(let list)): points = list.map { Point($0[0], $0[1]) }
            case ("points", _):
                throw AnalyticsSpec.Problem("\(kind.rawValue) \(name): \"points\" are [[x,y],[x,y],...] in the frame's pixels (or fractions of it)")
            case (_, .string(let t)): options.append((key, .text(t)))
            case (_, .number(let n)): options.append((key, .number(n)))
            case (_, .bool(let b)): options.append((key, .bool(b)))
            case (_, .numbers(let list)): options.append((key, .numbers(list)))
            case (_, .strings(let list)): options.append((key, .strings(list)))
            case (_, .points), (_, .other):
                throw AnalyticsSpec.Problem("\(kind.rawValue) \(name): \"\(key)\" is a number, true/false, a word or a list of them")
            }
        }
        return try RuleFields(kind, name: name, points: points, options: options)
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
