import CVHostCore
import Foundation
import Yams

/// `cvhost run --config FILE`: a YAML file that holds what the command line holds, one key per
/// long option (`input`, `plugin`, `output`, `queue-depth`...), read into the arguments it stands
/// for. Options given on the command line override the file's: a repeatable one (`--input`) given
/// there replaces the file's whole list. Every error names the file, the line and the key.
public struct RunConfigFile {
    /// What one key of the file stands for: its flag, the arguments, and where it was written.
    struct Setting {
        let key: String
        let line: Int
        let arguments: [String]
        /// For a list, the line of each item (a value of `arguments`), where the file writes one a line.
        var itemLines: [Int] = []
    }

    public enum Kind: Sendable { case list, string, number, integer, flag, invertedFlag }

    /// Every option of `cvhost run` but --config itself (RunOptions: a test checks them against `run --help`).
    public static var keys: [String: Kind] { RunOptions.keys }
    // Lines under 80 columns: ArgumentParser wraps longer ones badly.
    public static let helpText = """
        CONFIG FILE (--config FILE)
        A YAML mapping whose keys are the long options above, without the dashes (the unit cvhost@NAME.service runs `cvhost run --config /etc/cvhost/NAME.yaml`):
          input: gate=rtsp://10.0.0.5/stream1    # or a list: [a.mp4, b.mp4]
          plugin:
            - barcode:symbologies=qrcode         # as on the command line,
            - name: face                         # or a mapping of options
              instances: 2
          control: {brightness: 140, focus_auto: on}
          output: [-, "mqtt://broker.lan/cvhost"]
          reconnect: true
          metrics-interval: 10
        An option given on the command line replaces the file's (a list as a whole). Errors name the file, the line and the key (exit 64). A list has at most 1000 items; the file and the command line at most 2500 arguments together.
        """

    /// At most so many items in one list, and arguments in all (the file's and the command line's):
    /// the argument parser takes time that grows with the square of their count (20,000 hosts
    /// took minutes), so a list that long is refused at once rather than parsed slowly.
    public static let maxListItems = 1000
    public static let maxArguments = 2500

    /// Short names of flags, for telling that the command line gives them.
    static let shortNames = ["v": "verbose", "q": "quiet"]

    public let path: String
    let settings: [Setting]

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(path: String) throws {
        self.path = path
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read (permissions?)" : "does not exist"
            throw Failure(description: "config file \(path) \(reason)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw Failure(description: "\(path): not UTF-8 text; write the config file in UTF-8")
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw Failure(description: "\(path):\(Self.describe(error, in: text))")
        }
        guard let root else { settings = []; return }  // an empty file: nothing set
        guard let mapping = root.mapping else {
            throw Failure(description: "\(path):\(root.mark?.line ?? 1): write the settings as `key: value` lines (e.g. `plugin: barcode`)")
        }
        var settings: [Setting] = []
        for (keyNode, value) in mapping {
            let line = keyNode.mark?.line ?? 0
            let key = keyNode.string ?? ""
            func fail(_ message: String) -> Failure { Failure(description: "\(path):\(line): \(key): \(message)") }
            guard let kind = Self.keys[key] else {
                let hint = Suggestion.closest(to: key, in: Array(Self.keys.keys))
                throw Failure(description: "\(path):\(line): unknown key '\(key)'" + (hint.map { " (did you mean '\($0)'?)" } ?? "")
                              + "; the keys are run's long options: cvhost run --help")
            }
            if kind == .list, let count = value.sequence?.count ?? value.mapping?.count, count > Self.maxListItems {
                throw fail("\(count) items: a list has at most \(Self.maxListItems)")
            }
            var setting = Setting(key: key, line: line, arguments: try Self.arguments(key, kind, value, fail: fail))
            if kind == .list { setting.itemLines = (value.sequence.map(Array.init) ?? [value]).map { $0.mark?.line ?? line } }
            settings.append(setting)
        }
        self.settings = settings
    }

    /// The arguments of the file's settings that the command line does not give, then the
    /// command line's own: what `cvhost run` is parsed from.
    public func merged(with commandLine: [String]) -> [String] {
        let given = Self.flagsGiven(commandLine)
        return settings.filter { !given.contains($0.key) }.flatMap(\.arguments) + commandLine
    }

    /// The message of an error about the merged arguments, with the file, line and key in front
    /// when it is about an option that came from the file (e.g. `--queue-depth must be ...`).
    public func locate(_ message: String, commandLine: [String]) -> String {
        let given = Self.flagsGiven(commandLine)
        // The option the message names first ("--control ... apply to cameras, not to --input").
        let named = settings.filter { !given.contains($0.key) }
            .compactMap { setting in message.range(of: "--\(setting.key)").map { (setting, $0.lowerBound) } }
        // (--http-linger before --http: the longer name at the same place.)
        guard let setting = named.min(by: { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0.key.count > $1.0.key.count) })?.0 else { return message }
        return "\(path):\(setting.line): \(setting.key): \(message)"
    }

    /// Where the file gives `value` of the list `key` (`FILE:LINE: KEY`: a plugin spec, a zone),
    /// when the run's are the file's (the command line does not give that option): an error about it then names it.
    public func origin(of key: String, value: String, commandLine: [String]) -> String? {
        guard !Self.flagsGiven(commandLine).contains(key), let setting = settings.first(where: { $0.key == key }) else { return nil }
        let values = stride(from: 1, to: setting.arguments.count, by: 2).map { setting.arguments[$0] }
        guard let i = values.firstIndex(of: value) else { return nil }
        return "\(path):\(i < setting.itemLines.count ? setting.itemLines[i] : setting.line): \(key)"
    }

    /// FILE of `--config FILE` or `--config=FILE` in `run`'s arguments.
    public static func configPath(in arguments: [String]) -> String? {
        for (i, argument) in arguments.enumerated() {
            if argument == "--" { return nil }
            if argument == "--config" { return i + 1 < arguments.count ? arguments[i + 1] : nil }
            if argument.hasPrefix("--config=") { return String(argument.dropFirst("--config=".count)) }
        }
        return nil
    }

    // MARK: - Values

    private static func arguments(_ key: String, _ kind: Kind, _ value: Node, fail: (String) -> Failure) throws -> [String] {
        switch kind {
        case .list:
            // control: {brightness: 140, focus_auto: on} -> --control brightness=140 --control focus_auto=on
            if key == "control", let mapping = value.mapping {
                return try mapping.flatMap { pair in ["--control", "\(try scalar(pair.key, fail: fail))=\(try scalar(pair.value, fail: fail))"] }
            }
            let items = value.sequence.map(Array.init) ?? [value]
            return try items.flatMap { item -> [String] in ["--\(key)", try listItem(key, item, fail: fail)] }
        case .string:
            return ["--\(key)", try scalar(value, fail: fail)]
        case .number:
            let text = try scalar(value, fail: fail)
            guard Double(text) != nil else { throw fail("expected a number of seconds (or a rate), not '\(text)'") }
            return ["--\(key)", text]
        case .integer:
            let text = try scalar(value, fail: fail)
            guard Int(text) != nil else { throw fail("expected a whole number, not '\(text)'") }
            return ["--\(key)", text]
        case .flag, .invertedFlag:
            guard value.scalar != nil, let on = value.bool else { throw fail("expected true or false, not '\(value.string ?? "a list")'") }
            if kind == .flag { return on ? ["--\(key)"] : [] }
            return [on ? "--\(key)" : "--no-\(key)"]
        }
    }

    /// One item of a list: a string as on the command line, or (plugin, control) a mapping.
    private static func listItem(_ key: String, _ item: Node, fail: (String) -> Failure) throws -> String {
        if item.scalar != nil { return try scalar(item, fail: fail) }
        guard let mapping = item.mapping else { throw fail("expected a string or a list of strings") }
        switch key {
        case "plugin":
            // {name: barcode, symbologies: "qrcode,ean13"} -> barcode:symbologies=qrcode\,ean13
            guard let name = mapping["name"]?.string ?? mapping["path"]?.string else {
                throw fail("a plugin written as a mapping needs `name: NAME` (or `path: ./libfoo.so`)")
            }
            let options = try mapping.filter { $0.key.string != "name" && $0.key.string != "path" }.map { pair in
                "\(pair.key.string ?? "")=\(try scalar(pair.value, fail: fail).replacingOccurrences(of: ",", with: "\\,"))"
            }
            return options.isEmpty ? name : name + ":" + options.joined(separator: ",")
        case "control":
            throw fail("write controls as one mapping (control: {brightness: 140}) or as NAME=VALUE strings")
        default:
            throw fail("expected a string or a list of strings")
        }
    }

    private static func scalar(_ node: Node, fail: (String) -> Failure) throws -> String {
        guard let text = node.scalar?.string else { throw fail("expected a single value, not a list or a mapping") }
        return text
    }

    /// The keys the command line gives (`--queue-depth 3`, `--queue-depth=3`, `--no-stdin-commands`, `-v`).
    static func flagsGiven(_ commandLine: [String]) -> Set<String> {
        var given = Set<String>()
        for argument in commandLine {
            if argument == "--" { break }
            if argument.hasPrefix("--") {
                var name = String(argument.dropFirst(2).prefix { $0 != "=" })
                if name.hasPrefix("no-"), keys[String(name.dropFirst(3))] == .invertedFlag { name.removeFirst(3) }
                given.insert(name)
            } else if argument.hasPrefix("-"), argument.count > 1 {
                for letter in argument.dropFirst() { if let name = shortNames[String(letter)] { given.insert(name) } }
            }
        }
        return given
    }

    private static func describe(_ error: YamlError, in text: String) -> String {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            return "\(mark.line):\(mark.column): \(problem)"
        case .duplicatedKeysInMapping(let duplicates, let context):
            // libyaml marks the mapping; the line to fix is the key's second one (at the top level).
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            let second = duplicates.first.flatMap { key in
                lines.indices.filter { lines[$0].hasPrefix(key) && lines[$0].dropFirst(key.count).drop { $0 == " " }.first == ":" }.dropFirst().first
            }
            return "\(second.map { $0 + 1 } ?? context.mark.line): \(duplicates.joined(separator: ", ")) given twice; give each key once"
        default:
            return " " + "\(error)".split(separator: "\n").joined(separator: " ")
        }
    }
}
