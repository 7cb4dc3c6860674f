import ArgumentParser
import CVHostCore
import CVHostRun
import CVHostLines
import CVHostOutput
import CVHostPlugins

struct PluginsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugins",
        abstract: "List the plugins cvhost can load, with their options.",
        discussion: """
            Plugins named on the command line are shown alone (a name, or a path: ./libfoo.so, ./brightness.py). Plugins are found as libcvhost-NAME.so in $CVHOST_PLUGIN_PATH (colon-separated folders), beside the \
            cvhost executable, and in <prefix>/lib/cvhost/plugins. Each file's descriptor is read from the file \
            without loading it: no plugin code runs. Files that are not usable plugins are reported on stderr. \
            With --json, each plugin is one JSON line (event "plugin"; see the schema, share/cvhost/cvhost-events.schema.json).
            """)

    @Flag(help: "One JSON object per plugin on stdout, for programs.")
    var json = false

    @Argument(help: ArgumentHelp("Plugins to show, by name (barcode) or path (./libfoo.so, ./brightness.py); default: every plugin found.",
                                 valueName: "plugin"))
    var plugins: [String] = []

    func run() throws {
        let loader = PluginLoader()
        let found: [PluginInfo]
        if plugins.isEmpty {
            // Read from the files: no plugin code runs (a plugin whose constructor would crash is listed).
            found = loader.discover { path, error in Log.warning("\(path): \(error.message)") }
        } else {
            // A Python plugin is imported (by its interpreter, in a process of its own) to read what it declares.
            found = try asCommandErrors { try plugins.map { text in
                do {
                    return try loader.find(text, isPath: PluginRequest(nameOrPath: text, options: []).isPath)
                } catch let error as PluginLoadError {
                    throw fail(error.message, code: error.kind.exitCode)
                }
            } }
        }
        if json {
            let writer = JSONLineWriter()
            for p in found { writer.write(PluginsCommand.descriptorLine(p)) }
            try asCommandErrors { try checkOutput(writer) }
            return
        }
        if found.isEmpty {
            print("No plugins found in: \(loader.searchPath.joined(separator: ", "))")
            return
        }
        for p in found {
            print("\(p.name) \(p.version) — \(p.summary)")
            print("  file:     \(p.path) (\(p.runtime == .python ? "Python API" : "ABI") \(p.abiMajor).\(p.abiMinor))")
            print("  formats:  \(p.pixelFormats.map(\.name).joined(separator: ", "))")
            print("  focus:    \(p.hints.autoFocusRangeRestriction.rawValue)"
                + (p.hints.minWidth > 0 ? "; min size \(p.hints.minWidth)x\(p.hints.minHeight)" : "")
                + (p.isStateless ? "; stateless (instances=N allowed)" : ""))
            if p.options.isEmpty {
                print("  options:  none")
            } else {
                print("  options:")
                let width = p.options.map { $0.name.count + $0.defaultValue.count + 1 }.max() ?? 0
                for o in p.options {
                    let head = "\(o.name)=\(o.defaultValue)"
                    print("    \(head.padding(toLength: width, withPad: " ", startingAt: 0))  \(o.help) [\(PluginsCommand.typeText(o))]")
                }
            }
            print("")
        }
        print("Every plugin also takes: " + PluginConfiguration.hostOptions.map(\.name).joined(separator: ", ")
            + " (see cvhost run --help).")
    }

    static func typeText(_ o: PluginOptionSpec) -> String {
        switch o.type {
        case .enum: return o.choices.joined(separator: "|")
        case .int, .double:
            guard let r = o.range else { return o.type.rawValue }
            return "\(o.type.rawValue) \(JSONObject.number(r.lowerBound, decimals: 6))..\(JSONObject.number(r.upperBound, decimals: 6))"
        default: return o.type.rawValue
        }
    }

    static func descriptorLine(_ p: PluginInfo) -> JSONObject {
        var e = JSONObject.envelope(event: "plugin", source: nil, plugin: p.name, tsNs: HostClock.wallNs())
        e.set("version", p.version)
        e.set("description", p.summary)
        e.set("path", p.path)
        e.set("pixel_formats", strings: p.pixelFormats.map(\.name))
        e.set("abi", "\(p.abiMajor).\(p.abiMinor)")
        e.set("runtime", p.runtime.rawValue)
        e.set("stateless", p.isStateless)
        var hints = JSONObject()
        hints.set("focus_range", p.hints.autoFocusRangeRestriction.rawValue)
        hints.set("min_width", p.hints.minWidth)
        hints.set("min_height", p.hints.minHeight)
        e.set("hints", object: hints)
        e.set("options", array: p.options.map { o in
            var j = JSONObject()
            j.set("name", o.name)
            j.set("type", o.type.rawValue)
            j.set("default", o.defaultValue)
            j.set("help", o.help)
            j.set("min", o.range?.lowerBound, decimals: 6)
            j.set("max", o.range?.upperBound, decimals: 6)
            if o.type == .enum { j.set("choices", strings: o.choices) }
            return j
        })
        return e
    }
}
