import CVHostCore
import CVHostLines
import CVHostPluginABI
import Glibc

/// One option a plugin declares (`cvhost_option_spec`), read out of the plugin's memory.
public struct PluginOptionSpec: Sendable, Equatable {
    public enum ValueType: String, Sendable {
        case bool, int, double, string, `enum`
        /// A file the plugin reads (a model): made absolute against the folder cvhost runs in, and
        /// checked to be a readable file, before the plugin (whose worker runs elsewhere) sees it.
        case file
    }

    public let name: String
    public let type: ValueType
    public let defaultValue: String
    public let help: String
    /// Bounds for int and double; nil when the plugin gave none.
    public let range: ClosedRange<Double>?
    public let choices: [String]

    public init(name: String, type: ValueType, defaultValue: String, help: String, range: ClosedRange<Double>? = nil,
                choices: [String] = []) {
        self.name = name
        self.type = type
        self.defaultValue = defaultValue
        self.help = help
        self.range = range
        self.choices = choices
    }

    /// Checks `value` against this option and returns it as the plugin receives it.
    /// - Throws: `.badOptionValue` naming the option, the value and what is allowed.
    public func normalize(_ value: String, plugin: String) throws -> String {
        func bad(_ expected: String) -> PluginLoadError {
            PluginLoadError(.badOptionValue, "plugin \(plugin): option \(name)=\(value) is not valid: expected \(expected)")
        }
        switch type {
        case .bool:
            switch value.lowercased() {
            case "true", "1", "yes", "on": return "true"
            case "false", "0", "no", "off": return "false"
            default: throw bad("true or false")
            }
        case .int:
            guard let v = Int64(value) else { throw bad("a whole number\(rangeText)") }
            if let range, !range.contains(Double(v)) { throw bad("a whole number\(rangeText)") }
            return String(v)
        case .double:
            guard let v = Double(value), v.isFinite else { throw bad("a number\(rangeText)") }
            if let range, !range.contains(v) { throw bad("a number\(rangeText)") }
            return value
        case .string:
            return value
        case .enum:
            guard choices.contains(value) else { throw bad("one of \(choices.joined(separator: ", "))") }
            return value
        case .file:
            if value.isEmpty { return value }
            let path = PathText.absolute(value)
            var st = stat()
            guard PathText.withFileSystemPath(path, { stat($0, &st) }) == 0 else {
                throw bad("a file (\(path): \(Errno.current.rawValue == ENOENT ? "no such file" : Errno.current.description))")
            }
            guard st.st_mode & S_IFMT == S_IFREG else { throw bad("a file (\(path) is not a regular file)") }
            guard PathText.withFileSystemPath(path, { access($0, R_OK) }) == 0 else {
                throw bad("a file you can read (\(path): \(Errno.current.description))")
            }
            return path
        }
    }

    private var rangeText: String {
        guard let range else { return "" }
        return " from \(JSONObject.number(range.lowerBound, decimals: 6)) to \(JSONObject.number(range.upperBound, decimals: 6))"
    }
}

/// What the user wrote after `--plugin`: `NAME[:key=value,...]` or `PATH[:key=value,...]`.
public struct PluginRequest: Sendable, Equatable {
    /// A plugin name (`barcode`) or a path to a shared object (`./libfoo.so`) or a Python file (`./brightness.py`).
    public let nameOrPath: String
    /// Options in the order written. Values may contain a comma written as `\,`.
    public let options: [(key: String, value: String)]

    public static func == (a: PluginRequest, b: PluginRequest) -> Bool {
        a.nameOrPath == b.nameOrPath && a.options.map(\.key) == b.options.map(\.key)
            && a.options.map(\.value) == b.options.map(\.value)
    }

    /// True when `nameOrPath` names a file rather than a plugin to search for.
    public var isPath: Bool { nameOrPath.contains("/") || nameOrPath.hasSuffix(".so") || nameOrPath.hasSuffix(".py") }

    /// Parses `NAME[:key=value,...]`, `PATH.so[:key=value,...]` or `PATH.py[:key=value,...]`.
    ///
    /// A name has no ':' or '/', so options start at its first ':'. A path's options start at
    /// the first ':' right after ".so" or ".py" (so paths and option values may both hold ':' and '/').
    /// - Throws: `.badOptionValue` for an option without `=`.
    public init(parsing text: String) throws {
        var colon = text.firstIndex(of: ":")
        let head = colon.map { text[..<$0] } ?? text[...]
        if head.contains("/") || head.hasSuffix(".so") || head.hasSuffix(".py") {
            let ends = [text.range(of: ".so:"), text.range(of: ".py:")].compactMap { $0 }
            colon = ends.min { $0.lowerBound < $1.lowerBound }.map { text.index(before: $0.upperBound) }
        }
        guard let colon else {
            nameOrPath = text
            options = []
            return
        }
        nameOrPath = String(text[..<colon])
        var parsed: [(String, String)] = []
        for item in PluginRequest.splitOptions(String(text[text.index(after: colon)...])) where !item.isEmpty {
            guard let eq = item.firstIndex(of: "=") else {
                throw PluginLoadError(.badOptionValue, "plugin \(nameOrPath): option '\(item)' has no value: write \(item)=VALUE")
            }
            parsed.append((String(item[..<eq]), String(item[item.index(after: eq)...])))
        }
        options = parsed
    }

    public init(nameOrPath: String, options: [(key: String, value: String)] = []) {
        self.nameOrPath = nameOrPath
        self.options = options
    }

    /// Splits on commas not preceded by a backslash, and unescapes `\,` and `\\`.
    static func splitOptions(_ s: String) -> [String] {
        var items: [String] = []
        var current = ""
        var escaped = false
        for c in s {
            if escaped {
                current.append(c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == "," {
                items.append(current)
                current = ""
            } else {
                current.append(c)
            }
        }
        if escaped { current.append("\\") }
        items.append(current)
        return items
    }
}
