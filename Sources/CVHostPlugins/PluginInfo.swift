import CVHostCore
import CVHostPluginABI

/// What a plugin file says of itself: its descriptor, read from the file without loading it (no
/// constructor, no entry point, none of its code runs), and checked. `cvhost plugins` shows it;
/// a run loads only plugins whose info passed (PluginLibrary).
public struct PluginInfo: Sendable {
    public let name: String
    public let version: String
    public let summary: String
    /// Where the shared object was found.
    public let path: String
    /// The ABI version the plugin was built for (its header's CVHOST_PLUGIN_ABI_MAJOR.MINOR).
    public let abiMajor: Int
    public let abiMinor: Int
    /// Accepted formats, most preferred first.
    public let pixelFormats: [PixelFormat]
    /// The plugin keeps no state between frames and may run as parallel instances.
    public let isStateless: Bool
    public let hints: CaptureHints
    public let options: [PluginOptionSpec]
    /// The plugin has a flush() callback.
    public let hasFlush: Bool
    /// The plugin has an ordered stage (ABI 2.1): shared state, applied to frames in frame order.
    public let hasOrderedStage: Bool
    /// What the plugin is written in, as far as running it goes.
    public let runtime: PluginRuntime
    /// The plugin takes several frames in one call (a Python plugin's process_batch): frames of
    /// several inputs gathered for instances they share are given to it together (`batch`).
    public let takesBatches: Bool

    static let maxNameLength = 32

    /// True for names users can type: `[a-z][a-z0-9_-]{0,31}`.
    public static func isValidName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= maxNameLength, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first)
        else { return false }
        return name.utf8.allSatisfy { c in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
                || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
        }
    }

    /// Reads (`PluginDescriptorFile`) and checks the descriptor of the plugin file at `path`.
    /// - Throws: `PluginLoadError` naming the file and what is wrong (.notSharedObject,
    ///   .noEntrySymbol, .abiMismatch, .invalidDescriptor, .invalidName).
    public init(path: String) throws {
        let file = try PluginDescriptorFile(path: path)
        let d = file.descriptor
        let invalid = file.invalid
        guard let name = try file.text(d.name, "name") else {
            throw invalid("it has no name: set .name to a string constant (\(PluginDescriptorFile.readFromFile))")
        }
        guard PluginInfo.isValidName(name) else {
            throw PluginLoadError(.invalidName, "plugin \(path) has the invalid name '\(name)': names are [a-z][a-z0-9_-], at most 32 characters")
        }
        guard d.create != nil else { throw invalid("required callback create is missing: set .create") }
        guard d.process != nil else { throw invalid("required callback process is missing: set .process") }
        guard d.destroy != nil else { throw invalid("required callback destroy is missing: set .destroy (cvhost calls it for every instance create() made)") }
        let stage = [d.shared_create != nil, d.ordered != nil, d.shared_destroy != nil]
        guard stage.allSatisfy({ $0 }) || (stage.allSatisfy({ !$0 }) && d.shared_flush == nil) else {
            throw invalid("its ordered stage is incomplete: shared_create, ordered and shared_destroy go together")
        }
        let unknownFlags = d.flags & ~UInt32(CVHOST_PLUGIN_FLAGS_KNOWN)
        guard unknownFlags == 0 else {
            throw PluginLoadError(.abiMismatch,
                                  "plugin \(path) (ABI \(file.abiMajor).\(file.abiMinor)) asks for flags 0x\(String(unknownFlags, radix: 16)) that this cvhost (ABI \(CVHOST_PLUGIN_ABI_MAJOR).\(CVHOST_PLUGIN_ABI_MINOR)) does not know: use a newer cvhost")
        }
        let accepted = try file.pixelFormatCodes().map { code throws(PluginLoadError) -> PixelFormat in
            guard let f = PixelFormat(rawValue: code) else { throw invalid("pixel format 0x\(String(code, radix: 16)) is not one cvhost knows") }
            return f
        }
        var hints = CaptureHints()
        if let h = try file.hints() {
            let range: AutoFocusRangeRestriction
            switch h.focus_range {
            case CVHOST_FOCUS_RANGE_NONE.rawValue: range = .none
            case CVHOST_FOCUS_RANGE_NEAR.rawValue: range = .near
            case CVHOST_FOCUS_RANGE_FAR.rawValue: range = .far
            default: throw invalid("focus range \(h.focus_range) is not one of none, near, far")
            }
            hints = CaptureHints(autoFocusRangeRestriction: range, minWidth: Int(h.min_width), minHeight: Int(h.min_height))
        }
        let options = try file.optionSpecs().enumerated().map { i, spec in try PluginInfo.readOption(spec, index: i, file: file) }
        let names = options.map(\.name)
        if let dup = names.first(where: { n in names.filter { $0 == n }.count > 1 }) {
            throw invalid("option \(dup) is declared twice")
        }
        if let reserved = names.first(where: { n in PluginConfiguration.hostOptions.contains { $0.name == n } }) {
            // Not a build problem: the plugin's author must rename the option.
            let hostNames = PluginConfiguration.hostOptions.map(\.name).joined(separator: ", ")
            throw PluginLoadError(.invalidDescriptor, "plugin \(path) is not usable: its option '\(reserved)' has the name of a host option "
                                  + "(\(hostNames); cvhost/plugin.h lists them): rename the option in the plugin")
        }
        self.name = name
        self.version = try file.text(d.version, "version") ?? "0"
        self.summary = try file.text(d.description, "description") ?? ""
        self.path = path
        self.abiMajor = file.abiMajor
        self.abiMinor = file.abiMinor
        self.pixelFormats = accepted
        self.isStateless = d.flags & UInt32(CVHOST_PLUGIN_FLAG_STATELESS) != 0
        self.hints = hints
        self.options = options
        self.hasFlush = d.flush != nil
        self.hasOrderedStage = d.ordered != nil
        self.runtime = .sharedObject
        // The C ABI has no batch entry point.
        self.takesBatches = false
    }

    init(name: String, version: String, summary: String, path: String, abiMajor: Int, abiMinor: Int, pixelFormats: [PixelFormat],
         isStateless: Bool, hints: CaptureHints, options: [PluginOptionSpec], hasFlush: Bool, hasOrderedStage: Bool,
         runtime: PluginRuntime, takesBatches: Bool = false) {
        self.name = name
        self.version = version
        self.summary = summary
        self.path = path
        self.abiMajor = abiMajor
        self.abiMinor = abiMinor
        self.pixelFormats = pixelFormats
        self.isStateless = isStateless
        self.hints = hints
        self.options = options
        self.hasFlush = hasFlush
        self.hasOrderedStage = hasOrderedStage
        self.runtime = runtime
        self.takesBatches = takesBatches
    }

    /// One entry of the option table, checked: its name, type, choices, and that its default is a valid value.
    private static func readOption(_ s: cvhost_option_spec, index: Int, file: PluginDescriptorFile) throws -> PluginOptionSpec {
        let text = file.text, invalid = file.invalid
        guard let name = try text(s.name, "option \(index)'s name") else {
            throw invalid("option \(index) has no name (\(PluginDescriptorFile.countHint))")
        }
        guard !name.isEmpty, name.utf8.allSatisfy({ c in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
                || c == UInt8(ascii: "_")
        }) else { throw invalid("option \(index)'s name '\(name.prefix(40))' is not [a-z0-9_]+" + (index > 0 ? " (\(PluginDescriptorFile.countHint))" : "")) }
        let type: PluginOptionSpec.ValueType
        switch s.type {
        case CVHOST_OPTION_BOOL.rawValue: type = .bool
        case CVHOST_OPTION_INT.rawValue: type = .int
        case CVHOST_OPTION_DOUBLE.rawValue: type = .double
        case CVHOST_OPTION_STRING.rawValue: type = .string
        case CVHOST_OPTION_ENUM.rawValue: type = .enum
        case CVHOST_OPTION_FILE.rawValue: type = .file
        default: throw invalid("option \(name) has unknown type \(s.type): use a CVHOST_OPTION_* type")
        }
        let choices = try text(s.choices, "option \(name)'s choices")?.split(separator: "|").map(String.init) ?? []
        if type == .enum && choices.isEmpty { throw invalid("enum option \(name) lists no choices: set its choices, e.g. \"fast|slow\"") }
        // The bounds are the file's word: NaN is no bound (and a range of it would trap).
        if s.min.isNaN || s.max.isNaN { throw invalid("option \(name)'s min or max is not a number: give numbers, or 0 and 0 for no range") }
        let range: ClosedRange<Double>? = (s.min == 0 && s.max == 0) || s.min > s.max ? nil : s.min...s.max
        let spec = PluginOptionSpec(
            name: name, type: type, defaultValue: try text(s.default_value, "option \(name)'s default") ?? "",
            help: try text(s.help, "option \(name)'s help") ?? "", range: range, choices: choices)
        do {
            _ = try spec.normalize(spec.defaultValue, plugin: name)
        } catch {
            throw invalid("the default of option \(name) ('\(spec.defaultValue)') is not valid (\(error)): fix its default_value")
        }
        return spec
    }
}

/// What a plugin is written in, as far as running it goes.
public enum PluginRuntime: String, Sendable {
    /// A shared object with the C ABI's descriptor (C, C++, Rust, Swift): in cvhost's process or a worker.
    case sharedObject = "shared_object"
    /// A Python file on cvhost's Python API (PythonPlugin): always in worker processes, one per instance.
    case python
}
