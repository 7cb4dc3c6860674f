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
///     {"version": 1,
///      "inputs": {"door": {"input": "rtsp://cam/1", "plugins": ["detect"]}, "old": null},
///      "zones": {"bay": "bay=10,10 200,10 200,200 10,200:dwell=30"}, "lines": {"gate": null},
///      "tracks": {"detect": "detect:high=0.5"}, "masks": {"tree": "tree=0,0 100,0 100,80"},
///      "filters": {"person": "person:min_area=2000", "car@door": "car:min_score=0.6,input=door"}}
///
/// An entry names what it replaces (an input by its name, a zone or line by its name, a track by
/// its plugin); null removes it; the zones, lines and tracks are written as --zone, --line and
/// --track take them.
public final class RunStateFile: Sendable {
    public struct Contents: Codable, Sendable, Equatable {
        public var version = 1
        public var inputs: [String: InputEntry?] = [:]
        public var zones: [String: String?] = [:]
        public var lines: [String: String?] = [:]
        public var tracks: [String: String?] = [:]
        /// By name; filters by label, `LABEL@INPUT` for an input's own.
        public var masks: [String: String?] = [:]
        public var filters: [String: String?] = [:]

        public init() {}

        /// A file of an earlier cvhost has no masks or filters (nor, written by hand, other parts).
        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            version = try c.decode(Int.self, forKey: .version)
            inputs = try c.decodeIfPresent([String: InputEntry?].self, forKey: .inputs) ?? [:]
            zones = try c.decodeIfPresent([String: String?].self, forKey: .zones) ?? [:]
            lines = try c.decodeIfPresent([String: String?].self, forKey: .lines) ?? [:]
            tracks = try c.decodeIfPresent([String: String?].self, forKey: .tracks) ?? [:]
            masks = try c.decodeIfPresent([String: String?].self, forKey: .masks) ?? [:]
            filters = try c.decodeIfPresent([String: String?].self, forKey: .filters) ?? [:]
        }
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
                let read = try JSONDecoder().decode(Contents.self, from: Data(bytes.prefix(max(0, n))))
                guard read.version == 1 else { throw UsageError("the state file \(path) is of version \(read.version): this cvhost reads version 1") }
                contents = Locked(read)
            } catch let e as UsageError {
                throw e
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

    /// A zone, line or track set (`text`: as --zone, --line, --track take it) or removed (nil).
    func record(_ kind: AnalyticsJSON.Kind, name: String, text: String?) {
        write { c in
            switch kind {
            case .zone: c.zones[name] = .some(text)
            case .line: c.lines[name] = .some(text)
            case .track: c.tracks[name] = .some(text)
            case .mask: c.masks[name] = .some(text)
            case .filter: c.filters[name] = .some(text)
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

/// What the command line and the config file give of a run's inputs and analytics, as text (the
/// flags' values), with a state file's changes applied over them (`RunStateFile.Contents.apply`).
public struct RunArguments: Sendable {
    public var inputs: [String]
    public var devices: [String]
    public var tracks: [String]
    public var zones: [String]
    public var lines: [String]
    public var filters: [String]
    public var masks: [String]
    /// The plugins named for an input added while running (by its name); an input not here has them all.
    public var inputPlugins: [String: [String]] = [:]

    public init(inputs: [String], devices: [String], tracks: [String], zones: [String], lines: [String], filters: [String] = [],
                masks: [String] = []) {
        self.inputs = inputs
        self.devices = devices
        self.tracks = tracks
        self.zones = zones
        self.lines = lines
        self.filters = filters
        self.masks = masks
    }
}

extension RunStateFile.Contents {
    /// `arguments` with the changes kept applied: an entry replaces what has its name (an input,
    /// a zone, a line; a track by its plugin), null removes it, the others are added.
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
        func named(_ texts: [String], _ changes: [String: String?], key: (String) -> String) -> [String] {
            var left = changes
            let out = texts.compactMap { text -> String? in
                guard let change = left.removeValue(forKey: key(text)) else { return text }
                return change
            }
            return out + left.sorted { $0.key < $1.key }.compactMap { $0.value }
        }
        let upTo = { (cut: Character) in { (text: String) in String(text.prefix { $0 != cut }) } }
        a.zones = named(a.zones, zones, key: upTo("="))
        a.lines = named(a.lines, lines, key: upTo("="))
        a.tracks = named(a.tracks, tracks, key: upTo(":"))
        a.masks = named(a.masks, masks, key: upTo("="))
        // A filter by its label and input (a text that cannot be read: by its label; refused later, naming it).
        a.filters = named(a.filters, filters) { text in
            (try? AnalyticsSpec.filter(text)).map { RunStateFile.key(.filter, name: $0.label, input: $0.input) } ?? upTo(":")(text)
        }
    }
}
