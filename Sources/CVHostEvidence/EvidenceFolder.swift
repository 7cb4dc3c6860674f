import CVHostCore
import Foundation
import Glibc

/// A folder of evidence within its budget. Only cvhost's own files are ever deleted: those named
/// in the index it keeps in the folder (`.cvhost-evidence`), oldest first, before each write (room
/// for it) and on a timer (age). A file is written under a name of its own first and renamed once
/// whole, so a clip cut short by a full disk or a kill never stands as a file a player would choke
/// on. The folder is used as the spool's is (PrivateFolder): refused when another user could write
/// it, and held by one run at a time (flock on the folder; the index says which process).
///
/// The index is a journal: a line a change (a file begun, a file whole, a file gone), appended as
/// it happens, and written anew whole (compacted) at start and once its lines outnumber twice the
/// files it names. A folder of 50,000 files costs a line a file, not the whole index twice a file;
/// a line cut short by a kill, or damaged by hand, costs that line only.
///
///     cvhost-evidence	2	KIND	PID             the header: the format, snapshots|clips, the run
///     p	NAME	MADE_NS	SOURCE	EVENT	LABEL      begun (named .partial-NAME until whole)
///     +	NAME	BYTES	MADE_NS	SOURCE	EVENT	LABEL  whole
///     -	NAME                                   gone (deleted, or never made whole)
///
/// An index of the first format (one line a file: NAME BYTES MADE_NS PARTIAL SOURCE EVENT LABEL,
/// no header) is read too, and written anew in this one.
package final class EvidenceFolder: @unchecked Sendable {
    // @unchecked Sendable: the index and the journal's descriptor are behind a lock; the folder's
    // descriptor is only read.
    package struct Entry: Equatable, Sendable {
        package let name: String
        package var bytes: UInt64
        /// Wall clock, ns since the epoch.
        let madeNs: Int64
        /// Being written: named `.partial-NAME` until whole.
        var partial: Bool
        /// The input it is of, and the kind and label of the event that made it (the first, for a clip).
        var source = ""
        var event = ""
        var label = ""
    }

    let path: String
    let budget: EvidenceSettings.Budget
    /// What it holds (written in its index's header).
    let kind: Kind
    package typealias Kind = EvidenceSettings.Kind
    private let files: PrivateFolder

    private struct Index {
        /// cvhost's files, oldest first.
        var entries: [Entry] = []
        /// Their bytes, added up (held at UInt64.max: an index's numbers are not trusted).
        var held: UInt64 = 0
        /// The journal, open for appending (-1 when it could not be opened: compacted at the next change).
        var journal: Int32 = -1
        /// Lines in the journal now.
        var lines = 0
    }
    private let index = Locked(Index())
    /// Files of cvhost's deleted to keep the budget (oldest first, or past max_age).
    private let deletions = Locked(0)
    var deleted: Int { deletions.withLock { $0 } }

    package static let indexName = ".cvhost-evidence"
    static let format = 2
    /// A source's or a label's text is kept up to this many characters (a plugin's label can be any length).
    static let maxField = 200
    /// A file's size as the index may say it: more is a damaged line (16 TiB).
    package static let maxBytes: UInt64 = 1 << 44
    /// Lines longer than this are damaged (a line of this format is a few hundred bytes).
    static let maxLine = 4096
    /// Files an index may name: lines past it are counted as damaged.
    static let maxEntries = 1_000_000

    /// Opens (or makes) the folder, takes it for this run, and reads its index: a file the index
    /// names that is gone is forgotten; one left half written by an earlier run (a kill) is
    /// deleted; damaged lines are skipped (said once, with how many).
    package init(_ path: String, kind: Kind, role: String, setting: String, budget: EvidenceSettings.Budget) throws(EvidenceError) {
        self.path = path
        self.budget = budget
        self.kind = kind
        do {
            files = try PrivateFolder(path, role: role, setting: setting)
        } catch {
            throw EvidenceError(description: error.description)
        }
        let read = Self.read(files)
        guard files.lockExclusively() else {
            let holder = read.pid.map { $0 == getpid() ? "this run names it already" : "cvhost process \($0) uses it" } ?? "another cvhost uses it"
            throw EvidenceError(description: "\(role) \(path) is in use (\(holder)): give each run, and each of --snapshots "
                                + "and --clips, a folder of its own (\(setting))")
        }
        if let other = read.kind, other != kind {
            throw EvidenceError(description: "\(role) \(path) holds \(other.rawValue) (its index says so): give \(kind.rawValue) "
                                + "a folder of their own (\(setting))")
        }
        if read.damaged > 0 {
            Log.warning("\(role) \(path): \(read.damaged) damaged line\(read.damaged == 1 ? "" : "s") of its index skipped "
                        + "(the files they named, if any, are no longer deleted by cvhost)")
        }
        if read.notFile { Log.warning("\(role) \(path): its index \(Self.indexName) is not a regular file: it is written anew") }
        let present = Set(files.names())
        var kept: [Entry] = []
        for e in read.entries {
            if e.partial {
                files.remove(Self.partialName(e.name))
            } else if present.contains(e.name) {
                kept.append(e)
            }
        }
        index.withLock { i in
            i.entries = kept.sorted { $0.madeNs < $1.madeNs }
            i.held = i.entries.map(\.bytes).clampedSum()
            compact(&i)
        }
    }

    deinit { index.withLock { if $0.journal >= 0 { close($0.journal) } } }

    static func partialName(_ name: String) -> String { ".partial-" + name }

    /// Makes room for a file of about `bytes`: deletes what is older than `maxAge`, then the oldest
    /// of cvhost's files until the folder holds at most `maxBytes` with it and its disk keeps
    /// `minFreeBytes` free. - Returns: false when that cannot be (nothing of cvhost's left to
    /// delete): the caller drops what it would write.
    package func makeRoom(for bytes: UInt64) -> Bool {
        sweep()
        return index.withLock { i in
            while true {
                let free = files.freeBytes ?? UInt64.max
                let fits = i.held.addingClamped(bytes) <= budget.maxBytes && free >= bytes && free - bytes >= budget.minFreeBytes
                if fits { return true }
                guard let oldest = i.entries.firstIndex(where: { !$0.partial }) else { return false }
                remove(at: oldest, &i)
                deletions.withLock { $0 += 1 }
            }
        }
    }

    /// Deletes cvhost's files older than `maxAge` (the timer's sweep). - Returns: how many.
    @discardableResult
    package func sweep(nowNs: Int64 = HostClock.wallNs()) -> Int {
        guard let maxAge = budget.maxAge else { return 0 }
        let cutoff = nowNs.subtractingClamped(Int64(clamped: maxAge * 1e9, to: 0...Int64.max))
        return index.withLock { i in
            var n = 0
            // Oldest first: the old ones are at the front (partial ones, being written, stay).
            var at = 0
            while at < i.entries.count, i.entries[at].madeNs < cutoff {
                if i.entries[at].partial {
                    at += 1
                } else {
                    remove(at: at, &i)
                    n += 1
                }
            }
            deletions.withLock { $0 += n }
            return n
        }
    }

    /// Starts the file `name` (written as `.partial-NAME`), of the input `source`, made by an
    /// event of kind `event`. - Returns: its descriptor, or the error.
    func start(_ name: String, source: String = "", event: String = "", label: String = "") -> Result<Int32, Errno> {
        let entry = Entry(name: name, bytes: 0, madeNs: HostClock.wallNs(), partial: true,
                          source: Self.bounded(source), event: Self.bounded(event), label: Self.bounded(label))
        index.withLock { i in
            i.entries.append(entry)
            journal("p\t\(name)\t\(entry.madeNs)\t\(entry.source)\t\(entry.event)\t\(entry.label)", &i)
        }
        let opened = files.open(Self.partialName(name), O_WRONLY | O_CREAT | O_EXCL)
        if case .failure = opened { forget(name) }
        return opened
    }

    /// The file is whole: it takes its name. - Returns: nil, or the error (the file is then deleted).
    func finish(_ name: String, bytes: UInt64) -> Errno? {
        if let e = files.rename(Self.partialName(name), to: name) {
            discard(name)
            return e
        }
        index.withLock { i in
            guard let at = i.entries.lastIndex(where: { $0.name == name }) else { return }
            i.entries[at].partial = false
            i.entries[at].bytes = bytes
            i.held = i.held.addingClamped(bytes)
            let e = i.entries[at]
            journal("+\t\(name)\t\(bytes)\t\(e.madeNs)\t\(e.source)\t\(e.event)\t\(e.label)", &i)
        }
        return nil
    }

    /// A file that will not be whole (a full disk, an error): deleted.
    func discard(_ name: String) {
        files.remove(Self.partialName(name))
        forget(name)
    }

    /// Writes `bytes` as the file `name`, whole or not at all. - Returns: nil, or the error.
    package func write(_ name: String, bytes: [UInt8], source: String = "", event: String = "", label: String = "") -> Errno? {
        let fd: Int32
        switch start(name, source: source, event: event, label: label) {
        case .success(let d): fd = d
        case .failure(let e): return e
        }
        let failure = Self.writeAll(fd, bytes)
        close(fd)
        if let failure {
            discard(name)
            return failure
        }
        return finish(name, bytes: UInt64(bytes.count))
    }

    /// cvhost's whole files here, newest first.
    package var entries: [Entry] { index.withLock { $0.entries.filter { !$0.partial }.reversed() } }

    /// One of cvhost's whole files here, opened to be read (never through a link, never a FIFO or
    /// a device: PrivateFolder.open). - Returns: its descriptor and size.
    package func open(_ name: String) -> (descriptor: Int32, size: UInt64)? {
        guard Self.isOwnName(name), index.withLock({ $0.entries.contains { $0.name == name && !$0.partial } }),
              case .success(let fd) = files.open(name, O_RDONLY) else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            close(fd)
            return nil
        }
        return (fd, UInt64(st.st_size))
    }

    /// The bytes of cvhost's files here.
    package var bytesHeld: UInt64 { index.withLock { $0.held } }

    /// Lines in the index now (what compaction bounds).
    package var indexLines: Int { index.withLock { $0.lines } }

    private func forget(_ name: String) {
        index.withLock { i in
            guard let at = i.entries.lastIndex(where: { $0.name == name }) else { return }
            i.entries.remove(at: at)
            journal("-\t\(name)", &i)
        }
    }

    /// Deletes the file of entry `at` and forgets it. Called with the index's lock held.
    private func remove(at: Int, _ i: inout Index) {
        let e = i.entries.remove(at: at)
        files.remove(e.name)
        if !e.partial { i.held = i.held.subtractingClamped(e.bytes) }
        journal("-\t\(e.name)", &i)
    }

    /// Appends one line to the journal, or writes the index anew when the journal has grown to twice
    /// the files or could not be written. Called with the index's lock held.
    private func journal(_ line: String, _ i: inout Index) {
        if i.journal < 0 || i.lines >= max(1024, 2 * i.entries.count) || Self.writeAll(i.journal, Array((line + "\n").utf8)) != nil {
            compact(&i)
        } else {
            i.lines += 1
        }
    }

    /// The index, written whole to a new file and renamed over the old one (a kill leaves one or
    /// the other), then opened for appending. Called with the index's lock held.
    private func compact(_ i: inout Index) {
        if i.journal >= 0 { close(i.journal) }
        i.journal = -1
        var text = "cvhost-evidence\t\(Self.format)\t\(kind.rawValue)\t\(getpid())\n"
        for e in i.entries {
            text += e.partial ? "p\t\(e.name)\t\(e.madeNs)\t\(e.source)\t\(e.event)\t\(e.label)\n"
                              : "+\t\(e.name)\t\(e.bytes)\t\(e.madeNs)\t\(e.source)\t\(e.event)\t\(e.label)\n"
        }
        let temp = Self.indexName + ".new"
        files.remove(temp)
        guard case .success(let fd) = files.open(temp, O_WRONLY | O_CREAT | O_EXCL) else { return }
        let failed = Self.writeAll(fd, Array(text.utf8)) != nil
        close(fd)
        guard !failed, files.rename(temp, to: Self.indexName) == nil else {
            files.remove(temp)
            return
        }
        if case .success(let fd) = files.open(Self.indexName, O_WRONLY | O_APPEND) {
            i.journal = fd
            i.lines = i.entries.count + 1
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Errno? {
        var done = 0
        while done < bytes.count {
            let (n, e) = bytes.withUnsafeBytes { b in SystemCall.retrying { Glibc.write(fd, b.baseAddress! + done, b.count - done) } }
            if let e { return e }
            if n <= 0 { return Errno(rawValue: EIO) }
            done += n
        }
        return nil
    }

    /// A source's, an event's or a label's text as the index keeps it: no tab or line break (they
    /// part its fields and lines), at most `maxField` characters.
    static func bounded(_ s: String) -> String {
        String(s.prefix(maxField).map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? " " : $0 })
    }

    /// What an index says: its files (by name, the last line about each winning), its kind and the
    /// process that wrote its header, and how many lines were damaged.
    struct Reading {
        var entries: [Entry] = []
        var kind: Kind?
        var pid: Int32?
        var damaged = 0
        /// The index is there but no regular file (a FIFO, a device): read as empty.
        var notFile = false
    }

    /// Reads the index a piece at a time (its size is not trusted: no whole-file read, no cap that
    /// drops every entry at once).
    static func read(_ files: PrivateFolder) -> Reading {
        var r = Reading()
        let fd: Int32
        switch files.open(indexName, O_RDONLY) {
        case .success(let d): fd = d
        case .failure(let e):
            r.notFile = e.rawValue == EINVAL
            return r
        }
        defer { close(fd) }
        var byName: [String: Entry] = [:]
        var line: [UInt8] = []
        var tooLong = false
        var first = true
        func take(_ bytes: ArraySlice<UInt8>) {
            defer { first = false }
            guard !tooLong, bytes.count <= maxLine else { r.damaged += 1; return }
            let fields = bytes.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            if first, fields.first == "cvhost-evidence" {
                guard fields.count == 4, Int(fields[1]) == format else { r.damaged += 1; return }
                r.kind = Kind(rawValue: fields[2])
                r.pid = Int32(fields[3])
                return
            }
            guard let change = parse(fields) else { r.damaged += 1; return }
            switch change {
            case .gone(let name):
                byName.removeValue(forKey: name)
            case .entry(let e):
                if byName[e.name] != nil || byName.count < maxEntries {
                    byName[e.name] = e
                } else {
                    r.damaged += 1
                }
            }
        }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var offset = 0
        while true {
            let n = chunk.withUnsafeMutableBytes { b in SystemCall.retrying { pread(fd, b.baseAddress, b.count, off_t(offset)) }.0 }
            if n <= 0 { break }
            offset += n
            var from = 0
            for at in 0..<n where chunk[at] == UInt8(ascii: "\n") {
                if !tooLong { line += chunk[from..<at] }
                take(line[...])
                line.removeAll(keepingCapacity: true)
                tooLong = false
                from = at + 1
            }
            if !tooLong { line += chunk[from..<n] }
            if line.count > maxLine {
                tooLong = true
                line.removeAll()
            }
        }
        // A last line without its newline: a write cut short by a kill.
        if !line.isEmpty || tooLong { r.damaged += 1 }
        r.entries = Array(byName.values)
        return r
    }

    private enum Change {
        case entry(Entry)
        case gone(String)
    }

    /// One line of the journal (or of the first format), or nil when it is damaged: a name that is
    /// not one cvhost gives, a number that is not one, a size past `maxBytes`.
    private static func parse(_ f: [String]) -> Change? {
        func size(_ s: String) -> UInt64? { UInt64(s).flatMap { $0 <= maxBytes ? $0 : nil } }
        switch f.first {
        case "-":
            guard f.count == 2, isOwnName(f[1]) else { return nil }
            return .gone(f[1])
        case "p":
            guard f.count == 6, isOwnName(f[1]), let made = Int64(f[2]) else { return nil }
            return .entry(Entry(name: f[1], bytes: 0, madeNs: made, partial: true, source: bounded(f[3]), event: bounded(f[4]), label: bounded(f[5])))
        case "+":
            guard f.count == 7, isOwnName(f[1]), let bytes = size(f[2]), let made = Int64(f[3]) else { return nil }
            return .entry(Entry(name: f[1], bytes: bytes, madeNs: made, partial: false, source: bounded(f[4]), event: bounded(f[5]), label: bounded(f[6])))
        default:
            // The first format: NAME BYTES MADE_NS PARTIAL SOURCE EVENT LABEL.
            guard f.count == 7, isOwnName(f[0]), let bytes = size(f[1]), let made = Int64(f[2]), f[3] == "0" || f[3] == "1" else { return nil }
            return .entry(Entry(name: f[0], bytes: bytes, madeNs: made, partial: f[3] == "1", source: bounded(f[4]), event: bounded(f[5]),
                                label: bounded(f[6])))
        }
    }

    /// A name cvhost gives its files: letters, digits, `-`, `_`, `.`, not starting with a dot (no
    /// path, never the index): an index edited by hand cannot make cvhost delete something else.
    package static func isOwnName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 200 && !name.hasPrefix(".")
            && name.unicodeScalars.allSatisfy { ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || "-_.".unicodeScalars.contains($0) }
    }
}

/// Why evidence cannot be kept: one line, naming the folder and what to do (exit 5 at start).
public struct EvidenceError: Error, CustomStringConvertible {
    public let description: String
}
