import CVHostCore
import CVHostLines

/// The commands that add, change, remove and list inputs while the run goes on (InputChanges does
/// the work), on stdin and over HTTP:
///
///     add_input     POST   /inputs        {"name":"door","input":"rtsp://cam/1","plugins":["detect"]}  (201)
///     change_input  PUT    /inputs/NAME   {"input":"rtsp://cam/2"}   (the input of that name, anew)
///     remove_input  DELETE /inputs/NAME
///     get_inputs    GET    /inputs        each input, its plugins and its health
///
/// `input` is what --input takes (a file, images, a URL, testsrc), `device` what --device takes
/// (a V4L2 camera's path); `plugins` names some of the run's plugins (all of them when left out).
/// Over HTTP, what an input may name is the run's `--allow-inputs` (InputPolicy: refused as forbidden, 403, beyond it).
extension LiveCommands {
    func addInput(_ spec: InputSpec, plugins: [String]?, origin: Origin) throws -> JSONObject {
        let changes = try changer()
        try changes.allow(spec, by: origin)
        let source = try changes.add(spec, plugins: plugins, by: origin.rawValue)
        if origin != .fleet { changes.state?.record(input: source.id, Self.entry(spec, plugins)) }
        return describe(source)
    }

    func changeInput(_ spec: InputSpec, plugins: [String]?, origin: Origin) throws -> JSONObject {
        let changes = try changer()
        try changes.allow(spec, by: origin)
        guard let old = inputs.named(spec.sourceID()) else { throw CommandRefusal(.notFound, "no input named \(spec.sourceID()): \(changes.names)") }
        let source = try changes.add(spec, plugins: plugins, by: origin.rawValue, replacing: old)
        if origin != .fleet { changes.state?.record(input: source.id, Self.entry(spec, plugins)) }
        return describe(source)
    }

    func removeInput(_ name: String, origin: Origin) throws -> JSONObject {
        let changes = try changer()
        try changes.remove(name, by: origin.rawValue)
        if origin != .fleet { changes.state?.record(input: name, nil) }
        var r = JSONObject()
        r.set("name", name)
        r.set("removed", true)
        return r
    }

    /// Every input (or the one called `name`: notFound when there is none), as it is now.
    func inputList(_ name: String?) throws -> JSONObject {
        let listed = inputs.all.filter { name == nil || $0.id == name }
        if let name, listed.isEmpty {
            throw CommandRefusal(.notFound, "no input named \(name): " + (inputs.all.isEmpty ? "the run has no input" : "the run's inputs are \(inputs.all.map(\.id).joined(separator: ", "))"))
        }
        var r = JSONObject()
        r.set("inputs", array: listed.map(describe))
        r.set("max_inputs", inputs.limit)
        return r
    }

    /// An input as the state file keeps it (--state).
    static func entry(_ spec: InputSpec, _ plugins: [String]?) -> RunStateFile.InputEntry {
        switch spec.kind {
        case .input(let text): RunStateFile.InputEntry(input: text, device: nil, plugins: plugins)
        case .camera(let path): RunStateFile.InputEntry(input: nil, device: path, plugins: plugins)
        case .firstCamera: RunStateFile.InputEntry(input: nil, device: nil, plugins: plugins)
        }
    }

    private func changer() throws -> InputChanges {
        try refuseAfterEnd()
        guard let changes else { throw CommandRefusal(.conflict, "this run cannot add or remove inputs") }
        return changes
    }

    /// An input in `get_inputs` and in an add's or change's answer: its name, what it reads (a
    /// password as ***), its plugins and its health.
    func describe(_ s: SourceRun) -> JSONObject {
        var j = JSONObject()
        j.set("name", s.id)
        switch s.spec.kind {
        case .input(let text): j.set("input", InputSpec.shown(text))
        case .camera(let path): j.set("device", path)
        case .firstCamera: j.set("device", s.device.uniqueID)
        }
        j.set("plugins", array: s.runners.map(Self.pluginState))
        j.set("health", object: InputHealth(s).json)
        return j
    }
}
