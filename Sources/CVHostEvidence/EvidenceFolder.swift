import CVHostCore
import Foundation
import Glibc

/// A folder of evidence within its budget. Only cvhost's own files are ever deleted: those named
/// in the index it keeps in the folder (`.cvhost-evidence`, one line a file: its name, bytes and
/// when it was made), oldest first, before each write (room for it) and on a timer (age). A file
/// is written under a name of its own first and renamed once whole, so a clip cut short by a full
/// disk or a kill never stands as a file a player would choke on. The folder is used as the spool's
/// is (PrivateFolder): refused when another user could write it.
final class EvidenceFolder: @unchecked Sendable {
    // @unchecked Sendable: the index is behind a lock; the folder's descriptor is only read.
    struct Entry: Equatable, Sendable {
        let name: String
        var bytes: UInt64
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
    private let files: PrivateFolder
    private let index = Locked<[Entry]>([])
    /// Files of cvhost's deleted to keep the budget (oldest first, or past max_age).
    private let deletions = Locked(0)
    var deleted: Int { deletions.withLock { $0 } }
    static let indexName = ".cvhost-evidence"

    /// Opens (or makes) the folder and reads its index: a file the index names that is gone is
    /// forgotten; one left half written by an earlier run (a kill) is deleted.
    init(_ path: String, role: String, setting: String, budget: EvidenceSettings.Budget) throws(EvidenceError) {
        self.path = path
        self.budget = budget
        do {
            files = try PrivateFolder(path, role: role, setting: setting)
        } catch {
            throw EvidenceError(description: error.description)
        }
        let present = Set(files.names())
        var entries: [Entry] = []
        for e in Self.read(files) {
            if e.partial {
                files.remove(Self.partialName(e.name))
            } else if present.contains(e.name) {
                entries.append(e)
            }
        }
        index.withLock { $0 = entries.sorted { $0.madeNs < $1.madeNs } }
        save()
    }

    static func partialName(_ name: String) -> String { ".partial-" + name }

    /// Makes room for a file of about `bytes`: deletes what is older than `maxAge`, then the oldest
    /// of cvhost's files until the folder holds at most `maxBytes` with it and its disk keeps
    /// `minFreeBytes` free. - Returns: false when that cannot be (nothing of cvhost's left to
    /// delete): the caller drops what it would write.
    func makeRoom(for bytes: UInt64) -> Bool {
        sweep()
        return index.withLock { entries in
            var deleted = false
            defer { if deleted { write(entries) } }
            while true {
                let held = entries.reduce(0) { $0 + $1.bytes }
                let free = files.freeBytes ?? UInt64.max
                let fits = held + bytes <= budget.maxBytes && free >= bytes && free - bytes >= budget.minFreeBytes
                if fits { return true }
                guard let oldest = entries.firstIndex(where: { !$0.partial }) else { return false }
                files.remove(entries[oldest].name)
                entries.remove(at: oldest)
                deleted = true
                deletions.withLock { $0 += 1 }
            }
        }
    }

    /// Deletes cvhost's files older than `maxAge` (the timer's sweep). - Returns: how many.
    @discardableResult
    func sweep(nowNs: Int64 = HostClock.wallNs()) -> Int {
        guard let maxAge = budget.maxAge else { return 0 }
        let cutoff = nowNs - Int64(maxAge * 1e9)
        return index.withLock { entries in
            let old = entries.filter { !$0.partial && $0.madeNs < cutoff }
            for e in old { files.remove(e.name) }
            deletions.withLock { $0 += old.count }
            entries.removeAll { !$0.partial && $0.madeNs < cutoff }
            if !old.isEmpty { write(entries) }
            return old.count
        }
    }

    /// Starts the file `name` (written as `.partial-NAME`), of the input `source`, made by an
    /// event of kind `event`. - Returns: its descriptor, or the error.
    func start(_ name: String, source: String = "", event: String = "", label: String = "") -> Result<Int32, Errno> {
        index.withLock { entries in
            entries.append(Entry(name: name, bytes: 0, madeNs: HostClock.wallNs(), partial: true, source: source, event: event, label: label))
            write(entries)
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
        index.withLock { entries in
            if let i = entries.firstIndex(where: { $0.name == name }) {
                entries[i].partial = false
                entries[i].bytes = bytes
            }
            write(entries)
        }
        return nil
    }

    /// A file that will not be whole (a full disk, an error): deleted.
    func discard(_ name: String) {
        files.remove(Self.partialName(name))
        forget(name)
    }

    /// Writes `bytes` as the file `name`, whole or not at all. - Returns: nil, or the error.
    func write(_ name: String, bytes: [UInt8], source: String = "", event: String = "", label: String = "") -> Errno? {
        let fd: Int32
        switch start(name, source: source, event: event, label: label) {
        case .success(let d): fd = d
        case .failure(let e): return e
        }
        var done = 0
        var failure: Errno?
        while done < bytes.count {
            let (n, e) = bytes.withUnsafeBytes { b in SystemCall.retrying { Glibc.write(fd, b.baseAddress! + done, b.count - done) } }
            if let e { failure = e; break }
            done += n
        }
        close(fd)
        if let failure {
            discard(name)
            return failure
        }
        return finish(name, bytes: UInt64(bytes.count))
    }

    /// cvhost's whole files here, newest first.
    var entries: [Entry] { index.withLock { $0.filter { !$0.partial }.reversed() } }

    /// One of cvhost's whole files here, opened to be read (never through a link). - Returns: its descriptor and size.
    func open(_ name: String) -> (descriptor: Int32, size: UInt64)? {
        guard Self.isOwnName(name), index.withLock({ $0.contains { $0.name == name && !$0.partial } }),
              case .success(let fd) = files.open(name, O_RDONLY) else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            close(fd)
            return nil
        }
        return (fd, UInt64(st.st_size))
    }

    /// The bytes of cvhost's files here.
    var bytesHeld: UInt64 { index.withLock { $0.reduce(0) { $0 + $1.bytes } } }

    private func forget(_ name: String) {
        index.withLock { entries in
            entries.removeAll { $0.name == name }
            write(entries)
        }
    }

    private func save() { index.withLock { write($0) } }

    /// The index, written whole to a new file and renamed over the old one (a kill leaves one or the other).
    private func write(_ entries: [Entry]) {
        // Tabs and newlines cannot be in a name (isOwnName) or an event's kind; a source's or label's are made spaces.
        func field(_ s: String) -> String { String(s.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? " " : $0 }) }
        let text = entries.map { e in
            "\(e.name)\t\(e.bytes)\t\(e.madeNs)\t\(e.partial ? 1 : 0)\t\(field(e.source))\t\(e.event)\t\(field(e.label))\n"
        }.joined()
        let temp = Self.indexName + ".new"
        files.remove(temp)
        guard case .success(let fd) = files.open(temp, O_WRONLY | O_CREAT | O_EXCL) else { return }
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let (n, e) = bytes.withUnsafeBytes { b in SystemCall.retrying { Glibc.write(fd, b.baseAddress! + done, b.count - done) } }
            if e != nil { break }
            done += n
        }
        close(fd)
        if done == bytes.count { _ = files.rename(temp, to: Self.indexName) } else { files.remove(temp) }
    }

    private static func read(_ files: PrivateFolder) -> [Entry] {
        guard case .success(let fd) = files.open(indexName, O_RDONLY) else { return [] }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size < 64 << 20 else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        let n = bytes.withUnsafeMutableBytes { SystemCall.readFully(fd, into: $0) }
        return String(decoding: bytes[..<n], as: UTF8.self).split(separator: "\n").compactMap { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard f.count == 7, let bytes = UInt64(f[1]), let made = Int64(f[2]), isOwnName(String(f[0])) else { return nil }
            return Entry(name: String(f[0]), bytes: bytes, madeNs: made, partial: f[3] == "1", source: String(f[4]), event: String(f[5]),
                         label: String(f[6]))
        }
    }

    /// A name cvhost gives its files: letters, digits, `-`, `_`, `.`, not starting with a dot (no
    /// path, never the index): an index edited by hand cannot make cvhost delete something else.
    static func isOwnName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 200 && !name.hasPrefix(".")
            && name.unicodeScalars.allSatisfy { ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || "-_.".unicodeScalars.contains($0) }
    }
}

/// Why evidence cannot be kept: one line, naming the folder and what to do (exit 5 at start).
public struct EvidenceError: Error, CustomStringConvertible {
    public let description: String
}
