import CVHostCore
import CVHostPluginABI

/// A plugin whose shared object is loaded and whose descriptor passed every check.
/// The shared object stays loaded for the life of the process (Swift cannot unload images, and
/// a plugin's code may still be on a stack somewhere until exit).
public struct LoadedPlugin: @unchecked Sendable {
    // @unchecked Sendable: `descriptor` points at the plugin's static, constant descriptor.

    public let name: String
    public let version: String
    public let summary: String
    /// Where the shared object was found.
    public let path: String
    /// Accepted formats, most preferred first.
    public let pixelFormats: [PixelFormat]
    /// The plugin keeps no state between frames and may run as parallel instances.
    public let isStateless: Bool
    public let hints: CaptureHints
    public let options: [PluginOptionSpec]
    let descriptor: UnsafePointer<cvhost_plugin_descriptor>

    /// Host-side options every plugin takes; plugins may not declare options with these names.
    public static let hostOptions: [PluginOptionSpec] = [
        PluginOptionSpec(name: "instances", type: .int, defaultValue: "1",
                         help: "run N instances on N threads (auto: one per core), results kept in frame order (stateless plugins)",
                         range: 1...64),
        PluginOptionSpec(name: "queue_depth", type: .int, defaultValue: "",
                         help: "frames that may wait for this plugin (default: --queue-depth)", range: 1...1000),
        PluginOptionSpec(name: "backpressure", type: .enum, defaultValue: "",
                         help: "drop-late or block for this plugin (default: --backpressure)", choices: ["drop-late", "block"]),
        PluginOptionSpec(name: "max_fps", type: .double, defaultValue: "0",
                         help: "deliver at most this many frames per second of media time (0: all)", range: 0...10000),
        PluginOptionSpec(name: "mirror", type: .bool, defaultValue: "false",
                         help: "flip frames left to right before this plugin sees them (results are in the flipped frame's pixels)"),
        PluginOptionSpec(name: "rotate", type: .enum, defaultValue: "0",
                         help: "turn frames clockwise by this many degrees, after mirror (for a camera mounted sideways or upside down)",
                         choices: ["0", "90", "180", "270"]),
    ]

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

    /// Reads and checks a descriptor returned by a plugin's entry symbol.
    /// - Throws: `.abiMismatch` or `.invalidDescriptor` naming the file and what is wrong.
    init(descriptor d: UnsafePointer<cvhost_plugin_descriptor>, path: String) throws {
        func invalid(_ what: String) -> PluginLoadError {
            PluginLoadError(.invalidDescriptor, "plugin \(path) is not usable: \(what); rebuild it against cvhost/plugin.h")
        }
        let abi = d.pointee.abi_version
        guard abi == CVHOST_PLUGIN_ABI_VERSION else {
            throw PluginLoadError(.abiMismatch,
                                  "plugin \(path) was built for plugin ABI \(abi), this cvhost needs ABI \(CVHOST_PLUGIN_ABI_VERSION): rebuild it against this cvhost's cvhost/plugin.h")
        }
        guard Int(d.pointee.struct_size) >= MemoryLayout<cvhost_plugin_descriptor>.size else {
            throw invalid("its descriptor is \(d.pointee.struct_size) bytes, expected \(MemoryLayout<cvhost_plugin_descriptor>.size)")
        }
        guard let cname = d.pointee.name else { throw invalid("it has no name") }
        let name = String(cString: cname)
        guard LoadedPlugin.isValidName(name) else {
            throw PluginLoadError(.invalidName, "plugin \(path) has the invalid name '\(name)': names are [a-z][a-z0-9_-], at most 32 characters")
        }
        guard d.pointee.create != nil else { throw invalid("required callback create is missing") }
        guard d.pointee.process != nil else { throw invalid("required callback process is missing") }
        guard d.pointee.destroy != nil else { throw invalid("required callback destroy is missing") }
        guard d.pointee.pixel_format_count >= 1, let formats = d.pointee.pixel_formats else {
            throw invalid("it lists no pixel formats")
        }
        var accepted: [PixelFormat] = []
        for i in 0..<Int(d.pointee.pixel_format_count) {
            guard let f = PixelFormat(rawValue: formats[i]) else {
                throw invalid("pixel format 0x\(String(formats[i], radix: 16)) is not one cvhost knows")
            }
            accepted.append(f)
        }
        let h = d.pointee.hints
        guard h.struct_size == 0 || Int(h.struct_size) >= MemoryLayout<cvhost_capture_hints>.size else {
            throw invalid("its capture hints are \(h.struct_size) bytes, expected \(MemoryLayout<cvhost_capture_hints>.size)")
        }
        let range: AutoFocusRangeRestriction
        switch h.focus_range {
        case CVHOST_FOCUS_RANGE_NONE.rawValue: range = .none
        case CVHOST_FOCUS_RANGE_NEAR.rawValue: range = .near
        case CVHOST_FOCUS_RANGE_FAR.rawValue: range = .far
        default: throw invalid("focus range \(h.focus_range) is not one of none, near, far")
        }
        var options: [PluginOptionSpec] = []
        if d.pointee.option_count > 0 {
            guard let table = d.pointee.options else { throw invalid("option_count is set but options is NULL") }
            let stride = Int(d.pointee.option_spec_size)
            guard stride >= MemoryLayout<cvhost_option_spec>.size else {
                throw invalid("option_spec_size is \(stride), expected \(MemoryLayout<cvhost_option_spec>.size)")
            }
            let base = UnsafeRawPointer(table)
            for i in 0..<Int(d.pointee.option_count) {
                let spec = base.advanced(by: i * stride).assumingMemoryBound(to: cvhost_option_spec.self).pointee
                options.append(try LoadedPlugin.readOption(spec, index: i, invalid: invalid))
            }
        }
        let names = options.map(\.name)
        if let dup = names.first(where: { n in names.filter { $0 == n }.count > 1 }) {
            throw invalid("option \(dup) is declared twice")
        }
        if let reserved = names.first(where: { n in LoadedPlugin.hostOptions.contains { $0.name == n } }) {
            throw invalid("option \(reserved) is reserved for the host")
        }
        self.name = name
        self.version = d.pointee.version.map { String(cString: $0) } ?? "0"
        self.summary = d.pointee.description.map { String(cString: $0) } ?? ""
        self.path = path
        self.pixelFormats = accepted
        self.isStateless = d.pointee.flags & UInt32(CVHOST_PLUGIN_FLAG_STATELESS) != 0
        self.hints = CaptureHints(autoFocusRangeRestriction: range, minWidth: Int(h.min_width), minHeight: Int(h.min_height))
        self.options = options
        self.descriptor = d
    }

    private static func readOption(_ s: cvhost_option_spec, index: Int, invalid: (String) -> PluginLoadError) throws
        -> PluginOptionSpec
    {
        guard let cname = s.name else { throw invalid("option \(index) has no name") }
        let name = String(cString: cname)
        guard !name.isEmpty, name.utf8.allSatisfy({ c in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
                || c == UInt8(ascii: "_")
        }) else { throw invalid("option name '\(name)' is not [a-z0-9_]+") }
        let type: PluginOptionSpec.ValueType
        switch s.type {
        case CVHOST_OPTION_BOOL.rawValue: type = .bool
        case CVHOST_OPTION_INT.rawValue: type = .int
        case CVHOST_OPTION_DOUBLE.rawValue: type = .double
        case CVHOST_OPTION_STRING.rawValue: type = .string
        case CVHOST_OPTION_ENUM.rawValue: type = .enum
        default: throw invalid("option \(name) has unknown type \(s.type)")
        }
        let choices = s.choices.map { String(cString: $0).split(separator: "|").map(String.init) } ?? []
        if type == .enum && choices.isEmpty { throw invalid("enum option \(name) lists no choices") }
        let range: ClosedRange<Double>? = (s.min == 0 && s.max == 0) || s.min > s.max ? nil : s.min...s.max
        let spec = PluginOptionSpec(
            name: name, type: type, defaultValue: s.default_value.map { String(cString: $0) } ?? "",
            help: s.help.map { String(cString: $0) } ?? "", range: range, choices: choices)
        do {
            _ = try spec.normalize(spec.defaultValue, plugin: name)
        } catch {
            throw invalid("the default of option \(name) is not valid (\(error))")
        }
        return spec
    }
}
