import CVHostAnalytics
import CVHostCore
import Foundation
import Glibc

/// `--state FILE`: every change made while the run goes on (inputs added, changed or removed;
/// tracks, zones and lines set or removed, over HTTP or stdin), kept so that the next start, and a
/// reload of the config file, applies it over the config file and the command line. Changes the
/// config file makes (a reload) are the file's, not kept here.
///
/// JSON, written whole at each change: to a file beside it, then renamed over it (a kill leaves
/// the old file or the new one, never half of one), readable by its owner only (0600: an input's
/// URL may hold its password). Its folder must be cvhost's user's own, as a spool's (PrivateFolder):
/// another user could otherwise put a file of their choosing in its place.
///
///     {"version": 2,
///      "inputs": {"door": {"input": "rtsp://cam/1", "plugins": ["detect"]}, "old": null},
///      "zones": {"bay": {"name": "bay", "points": [[10,10],[200,10],[200,200],[10,200]], "dwell": 30, ...}},
///      "lines": {"gate": null}, "tracks": {"detect": {"plugin": "detect", "high": 0.5, ...}},
///      "masks": {"tree": {...}}, "filters": {"person": {"label": "person", "min_area": 2000}, "car@door": {...}}}
///
/// An entry names what it replaces (an input by its name, a zone or line by its name, a track by
/// its plugin); null removes it; the zones, lines, tracks, masks and filters are in their one JSON
/// shape (RuleCoding, as GET /analytics says them). A file of version 1 (cvhost before 0.x) has
/// them as --zone, --line and --track take them: read, and written as version 2 at the next change.
public final class RunStateFile: Sendable {
    public struct Contents: Codable, Sendable, Equatable {
        public var version = 2
        public var inputs: [String: InputEntry?] = [:]
        public var zones: [String: ZoneSettings?] = [:]
        public var lines: [String: LineSettings?] = [:]
        public var tracks: [String: AnalyticsSpec.Tracked?] = [:]
        /// By name; filters by label, `LABEL@INPUT` for an input's own.
        public var masks: [String: BoxMask?] = [:]
        public var filters: [String: BoxFilter?] = [:]

        public init() {}

        /// A file of an earlier cvhost has no masks or filters (nor, written by hand, other parts),
        /// and its rules as text (version 1).
        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            version = try c.decode(Int.self, forKey: .version)
            guard version == 1 || version == 2 else { throw VersionProblem(version: version) }
            func rules<R: AnalyticsRule>(_ key: CodingKeys) throws -> [String: R?] {
                try (c.decodeIfPresent([String: Kept<R>?].self, forKey: key) ?? [:]).mapValues { $0?.rule }
            }
            inputs = try c.decodeIfPresent([String: InputEntry?].self, forKey: .inputs) ?? [:]
            zones = try rules(.zones)
            lines = try rules(.lines)
            tracks = try rules(.tracks)
            masks = try rules(.masks)
            filters = try rules(.filters)
            version = 2
        }

        /// A rule as a file of either version has it: its JSON, or the text its flag takes (version 1).
        private struct Kept<R: AnalyticsRule>: Decodable {
            let rule: R

            init(from decoder: Decoder) throws {
                if let text = try? decoder.singleValueContainer().decode(String.self) {
                    rule = try R(text: text)
                } else {
                    rule = try R(from: decoder)
                }
            }
        }
    }

    /// A state file of a version this cvhost does not read.
    struct VersionProblem: Error {
        let version: Int
    }

    /// The name an entry is kept under: a filter's label, with `@INPUT` for an input's own.
    static func key(_ kind: AnalyticsJSON.Kind, name: String, input: String?) -> String {
        kind == .filter ? name + (input.map { "@" + $0 } ?? "") : name
    }

    /// An input as added: what --input or --device takes, and the run's plugins named for it (nil: all).
    public struct InputEntry: Codable, Sendable, Equatable {
        public var input: String?
        public var device: String?
        public var plugins: [String]?
    }

    public let path: String
    let folder: PrivateFolder
    let name: String
    private let contents: Locked<Contents>
    /// A write that failed is said once, until one succeeds again.
    private let failing = Locked(false)

    /// The most a state file may hold: a run has at most --max-inputs inputs and 100 zones and lines.
    static let maxBytes = 4 << 20

    /// Reads the state file (none yet: no change kept).
    /// - Throws: UsageError naming the file: its folder or the file is not this user's own, or it
    ///   is not a state file cvhost wrote.
    public init(path: String) throws(UsageError) {
        self.path = path
        let url = URL(fileURLWithPath: path)
        name = url.lastPathComponent
        guard !name.isEmpty, name != ".", name != ".." else { throw UsageError("--state \(path): name a file, e.g. /var/lib/cvhost/state.json") }
        do {
            folder = try PrivateFolder(url.deletingLastPathComponent().path, role: "the state file's folder", setting: "--state")
        } catch {
            throw UsageError(error.description)
        }
        switch folder.open(name, O_RDONLY) {
        case .failure(let e) where e.rawValue == ENOENT:
            contents = Locked(Contents())
        case .failure(let e):
            throw UsageError("cannot read the state file \(path): \(e.rawValue == EINVAL || e.rawValue == ELOOP ? "not a regular file (a symbolic link?)" : "\(e)") (--state)")
        case .success(let fd):
            defer { close(fd) }
            var info = stat()
            fstat(fd, &info)
            if let problem = PrivateFolder.problem(info) {
                throw UsageError("the state file \(path) \(problem): cvhost reads only a state file of its own user (--state)")
            }
            guard Int(info.st_size) <= Self.maxBytes else { throw UsageError("the state file \(path) is larger than \(Self.maxBytes >> 20) MB: not cvhost's (--state)") }
            var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
            let n = bytes.withUnsafeMutableBytes { SystemCall.readFully(fd, into: $0) }
            do {
                contents = Locked(try JSONDecoder().decode(Contents.self, from: Data(bytes.prefix(max(0, n)))))
            } catch let e as AnalyticsSpec.Problem {
                throw UsageError("the state file \(path) keeps a rule that cannot be (\(e.description)): remove it from the file, or move the file away (--state)")
            } catch let e as VersionProblem {
                throw UsageError("the state file \(path) is of version \(e.version): this cvhost reads versions 1 and 2")
            } catch {
                throw UsageError("the state file \(path) is not cvhost's state (\(Self.reason(error))): move it away, or name another file (--state)")
            }
        }
    }

    public var current: Contents { contents.withLock { $0 } }

    /// An input added or changed (`entry`), or removed (nil), while the run goes on.
    func record(input id: String, _ entry: InputEntry?) {
        write { $0.inputs[id] = .some(entry) }
    }

    /// A track, zone, line, mask or filter set or removed while the run goes on.
    func record(_ change: AnalyticsRules.Change) {
        write { c in
            switch change {
            case .zone(let name, let z): c.zones[name] = .some(z)
            case .line(let name, let l): c.lines[name] = .some(l)
            case .track(let plugin, let t): c.tracks[plugin] = .some(t)
            case .mask(let name, let m): c.masks[name] = .some(m)
            case .filter(let label, let input, let f): c.filters[Self.key(.filter, name: label, input: f?.input ?? input)] = .some(f)
            }
        }
    }

    /// A track, zone, line, mask or filter removed, by the name it is kept under (`key`).
    func remove(_ kind: AnalyticsJSON.Kind, name: String) {
        write { c in
            switch kind {
            case .zone: c.zones[name] = .some(nil)
            case .line: c.lines[name] = .some(nil)
            case .track: c.tracks[name] = .some(nil)
            case .mask: c.masks[name] = .some(nil)
            case .filter: c.filters[name] = .some(nil)
            }
        }
    }

    /// Changes the contents and writes them whole: a file beside the state file, then renamed over it.
    private func write(_ change: (inout Contents) -> Void) {
        let bytes: Data = contents.withLock { c in
            change(&c)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            return (try? encoder.encode(c)) ?? Data()
        }
        let problem = folder.replace(name, with: [UInt8](bytes)).map { "\($0)" }
        let (sayIt, recovered) = failing.withLock { f -> (Bool, Bool) in
            defer { f = problem != nil }
            return (problem != nil && !f, problem == nil && f)
        }
        if sayIt { Log.warning("cannot write the state file \(path): \(problem!): changes made while running are not kept for the next start") }
        if recovered { Log.info("the state file \(path) is written again") }
    }

    private static func reason(_ error: Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let c): c.debugDescription
        case DecodingError.typeMismatch(_, let c), DecodingError.valueNotFound(_, let c), DecodingError.keyNotFound(_, let c):
            "\(c.codingPath.map(\.stringValue).joined(separator: ".")): \(c.debugDescription)"
        default: "\(error)"
        }
    }
}

/// What the command line and the config file give of a run's inputs, as text (the flags' values),
/// with a state file's changes applied over them (`RunStateFile.Contents.apply`).
public struct RunArguments: Sendable {
    public var inputs: [String]
    public var devices: [String]
    /// The plugins named for an input added while running (by its name); an input not here has them all.
    public var inputPlugins: [String: [String]] = [:]

    public init(inputs: [String], devices: [String]) {
        self.inputs = inputs
        self.devices = devices
    }
}

extension RunStateFile.Contents {
    /// `arguments` with the inputs kept applied: an entry replaces the input of its name, null
    /// removes it, the others are added.
    public func apply(to a: inout RunArguments) {
        var inputEntries = inputs
        func kept(_ texts: [String], device: Bool) -> [String] {
            texts.compactMap { text in
                let (name, rest) = InputSpec.splitName(text)
                let id = name ?? (device ? rest : PasswordRedaction.redact(rest))
                guard let entry = inputEntries.removeValue(forKey: id) else { return text }
                guard let entry, (entry.device != nil) == device else { return nil }  // removed, or now the other kind (added below)
                if let plugins = entry.plugins { a.inputPlugins[id] = plugins }
                return (InputSpec.isName(id) ? "\(id)=" : "") + (entry.input ?? entry.device ?? rest)
            }
        }
        a.inputs = kept(a.inputs, device: false)
        a.devices = kept(a.devices, device: true)
        for (id, entry) in inputEntries.sorted(by: { $0.key < $1.key }) {
            guard let entry else { continue }
            if let plugins = entry.plugins { a.inputPlugins[id] = plugins }
            let named = InputSpec.isName(id) ? "\(id)=" : ""
            if let input = entry.input { a.inputs.append(named + input) } else if let device = entry.device { a.devices.append(named + device) }
        }
    }

    /// `rules` with the tracks, zones, lines, masks and filters kept applied over them: an entry
    /// replaces what has its name (a track by its plugin, a filter by its label and input), null
    /// removes it, the others are added (in the order of their names).
    func apply(to rules: inout AnalyticsSettings) {
        func kept<R: AnalyticsRule>(_ given: [R], _ changes: [String: R?], key: (R) -> String = { $0.ruleName }) -> [R] {
            var left = changes
            let out = given.compactMap { r -> R? in
                guard let change = left.removeValue(forKey: key(r)) else { return r }
                return change
            }
            return out + left.sorted { $0.key < $1.key }.compactMap { $0.value }
        }
        rules.tracked = kept(rules.tracked, tracks)
        rules.zones = kept(rules.zones, zones)
        rules.lines = kept(rules.lines, lines)
        rules.masks = kept(rules.masks, masks)
        rules.filters = kept(rules.filters, filters) { RunStateFile.key(.filter, name: $0.label, input: $0.input) }
    }

    /// The names of what it keeps of `kind` (set, not removed): said as the state file's in a refusal.
    func keeps(_ kind: AnalyticsJSON.Kind, _ name: String) -> Bool {
        switch kind {
        case .zone: (zones[name] ?? nil) != nil
        case .line: (lines[name] ?? nil) != nil
        case .track: (tracks[name] ?? nil) != nil
        case .mask: (masks[name] ?? nil) != nil
        case .filter: filters.contains { $0.value?.label == name }
        }
    }
}
