import CVHostAnalytics
import CVHostCore
import Foundation
import Glibc

/// The counts that go on after a restart (`--state FILE`): each input's tracked plugins' line and
/// zone totals per label (`CountTotals`), in a file beside the state file (`FILE` without `.json`,
/// then `.totals.json`), so that a site's counts (today's footfall) survive a restart, an update,
/// a reload. Not in the state file, which records changes made while running, not counters.
///
///     {"version": 1, "reset": 1764806400,
///      "inputs": {"door": {"detect": {"lines": {...}, "zones": {...}}}}}
///
/// Written whole (as the state file: beside it, synced, renamed over it) by `TotalsKeeper`, at most
/// every 2 s and at the stop. A file that cannot be read is set aside (renamed `NAME.damaged-UNIX`)
/// and said: the counts start at 0, and the run starts whatever the file holds.
final class KeptTotals: Sendable {
    struct Contents: Codable, Equatable {
        var version = 1
        /// When the counts were last set to 0 (`reset_counts`, the daily reset): Unix seconds.
        var reset: Double?
        var inputs: [String: [String: CountTotals]] = [:]

        init() {}

        /// A file may leave out what it has none of (`reset`, `inputs`).
        init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            version = try c.decode(Int.self, forKey: .version)
            reset = try c.decodeIfPresent(Double.self, forKey: .reset)
            inputs = try c.decodeIfPresent([String: [String: CountTotals]].self, forKey: .inputs) ?? [:]
        }
    }

    let path: String
    private let folder: PrivateFolder
    private let name: String
    private let contents: Locked<(now: Contents, written: Contents?)>
    /// A file of a newer cvhost is left as it is: never written over.
    private let writable: Bool
    private let failing = Locked(false)
    /// Held through a write: two writers (the keeper's thread, a reset) write one after the other.
    private let writing = Locked(())

    /// The most a totals file may hold.
    static let maxBytes = 16 << 20

    /// The totals kept beside `state`.
    init(beside state: RunStateFile) {
        folder = state.folder
        let base = state.name.hasSuffix(".json") ? String(state.name.dropLast(5)) : state.name
        name = base + ".totals.json"
        path = URL(fileURLWithPath: state.path).deletingLastPathComponent().appendingPathComponent(name).path
        let (read, writable) = Self.read(folder, name, path: path)
        self.writable = writable
        contents = Locked((read, read))
    }

    private static func read(_ folder: PrivateFolder, _ name: String, path: String) -> (Contents, writable: Bool) {
        let fd: Int32
        switch folder.open(name, O_RDONLY) {
        case .failure(let e) where e.rawValue == ENOENT: return (Contents(), true)
        case .failure(let e):
            return setAside(folder, name, path: path, why: e.rawValue == EINVAL || e.rawValue == ELOOP ? "not a regular file" : "\(e)")
        case .success(let d): fd = d
        }
        defer { close(fd) }
        var info = stat()
        fstat(fd, &info)
        if let problem = PrivateFolder.problem(info) { return setAside(folder, name, path: path, why: "it \(problem)") }
        guard Int(info.st_size) <= maxBytes else { return setAside(folder, name, path: path, why: "larger than \(maxBytes >> 20) MB") }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        let n = bytes.withUnsafeMutableBytes { SystemCall.readFully(fd, into: $0) }
        struct Version: Decodable { let version: Int }
        let data = Data(bytes.prefix(max(0, n)))
        // A newer cvhost's file (whatever its shape) is left for it.
        if let v = try? JSONDecoder().decode(Version.self, from: data), v.version > 1 {
            Log.warning("the kept counts \(path) are of version \(v.version), of a newer cvhost: this run counts from 0 and leaves the file as it is")
            return (Contents(), false)
        }
        guard let read = try? JSONDecoder().decode(Contents.self, from: data), read.version == 1 else {
            return setAside(folder, name, path: path, why: "not cvhost's totals")
        }
        return (read, true)
    }

    private static func setAside(_ folder: PrivateFolder, _ name: String, path: String, why: String) -> (Contents, writable: Bool) {
        let aside = "\(name).damaged-\(Int(Date().timeIntervalSince1970))"
        let moved = folder.rename(name, to: aside) == nil
        Log.warning("the kept counts \(path) cannot be read (\(why)): lines and zones count from 0"
                    + (moved ? "; the file is kept as \(aside)" : ""))
        return (Contents(), moved)
    }

    /// What plugin `plugin` on input `source` had counted.
    func totals(source: String, plugin: String) -> CountTotals {
        contents.withLock { $0.now.inputs[source]?[plugin] } ?? CountTotals()
    }

    /// When the counts were last set to 0, if ever.
    var lastReset: Double? { contents.withLock { $0.now.reset } }

    /// Takes the counts of plugins at work now (`live`); with `sources` (the inputs the run has),
    /// keeping those of inputs not at work (a camera down since the start) and dropping those of
    /// inputs the run no longer has.
    func update(_ live: [(source: String, plugin: String, totals: CountTotals)], sources: Set<String>? = nil) {
        contents.withLock { c in
            for (source, plugin, totals) in live { c.now.inputs[source, default: [:]][plugin] = totals }
            if let sources { c.now.inputs = c.now.inputs.filter { sources.contains($0.key) } }
        }
    }

    /// Every input's counts back to 0 (those not at work too), at `time`.
    func reset(at time: Double) {
        contents.withLock { c in
            c.now.inputs = [:]
            c.now.reset = time
        }
    }

    /// The counts of input `source` (nil: every input) set back to 0: those of the lines and zones
    /// named (nil: every one).
    func reset(source: String?, lines: Set<String>?, zones: Set<String>?) {
        contents.withLock { c in
            for (id, plugins) in c.now.inputs where source == nil || source == id {
                c.now.inputs[id] = plugins.mapValues { t in
                    var t = t
                    t.lines = t.lines.filter { !(lines?.contains($0.key) ?? (zones == nil)) }
                    t.zones = t.zones.filter { !(zones?.contains($0.key) ?? (lines == nil)) }
                    return t
                }
            }
        }
    }

    /// With a daily reset: counts last set to 0 before its latest time (cvhost was not running
    /// then: stopped at 23:00, started at 01:00) are set to 0 now, before any line counts; the
    /// first run with a daily reset counts from its start.
    func resetIfOlder(than daily: DailyTime, now: Date = Date()) {
        let due = daily.latest(atOrBefore: now).timeIntervalSince1970
        let stale = contents.withLock { c -> Bool in
            guard let last = c.now.reset else {
                c.now.reset = now.timeIntervalSince1970
                return false
            }
            guard last < due else { return false }
            c.now.inputs = [:]
            c.now.reset = now.timeIntervalSince1970
            return true
        }
        if stale { Log.info("the kept counts are older than the last --reset-counts-at \(daily): lines and zones count from 0") }
    }

    /// Writes the file when the counts changed since it was last written.
    func write() {
        guard writable else { return }
        writing.withLock { _ in writeNow() }
    }

    private func writeNow() {
        let bytes: [UInt8]? = contents.withLock { c in
            guard c.now != c.written else { return nil }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            guard let data = try? encoder.encode(c.now) else { return nil }
            c.written = c.now
            return [UInt8](data)
        }
        guard let bytes else { return }
        let problem = folder.replace(name, with: bytes)
        let (sayIt, recovered) = failing.withLock { f -> (Bool, Bool) in
            defer { f = problem != nil }
            return (problem != nil && !f, problem == nil && f)
        }
        if problem != nil { contents.withLock { $0.written = nil } }
        if sayIt { Log.warning("cannot write the kept counts \(path): \(problem!): the counts of this run will not go on after a restart") }
        if recovered { Log.info("the kept counts \(path) are written again") }
    }
}
