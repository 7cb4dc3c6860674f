import CVHostCore
import CVHostLines
import Glibc

/// A broker sink's lines on disk until the broker has them (`spool=DIR`): every line the sink takes
/// is appended here before it is sent, and stays until the broker acknowledges it (and every line
/// before it). So a broker away longer than memory holds, or cvhost stopped or killed while it is
/// away, loses nothing: the next run with the same folder sends what is left first, then its own.
/// A line sent twice (acknowledged, but the acknowledgement not yet on disk) carries the same event id.
///
/// On disk: segment files `NNNNNNNNNNNNNNNNNNNN.spool` of records (`SpoolRecord`), `cursor` (the
/// segment and offset of the first line not known to be delivered; earlier segments are deleted),
/// and `lock` (held with flock while a cvhost uses the folder: one sink a spool). The folder and
/// its files are the user's alone (0700, 0600): results may be private, and a folder another user
/// can change is refused (`PrivateFolder`). Nothing on disk is trusted: segment names are parsed
/// with checked arithmetic, damaged records are skipped to the next whole one and counted
/// (`damaged`), and a cursor naming a segment that is not there is ignored, never a reason to
/// delete.
///
/// Bounded by `maxBytes`: a line that does not fit is not spooled, and is counted (`droppedFull`):
/// the oldest lines, which the broker is waiting for, are kept, and the newest are lost while the
/// spool is full. A line the disk refuses (full, failing) is handed back to the caller, to be sent
/// from memory. Thread-safe: the sink's spool writer appends while its sender reads.
final class Spool: @unchecked Sendable {
    // @unchecked Sendable: every mutable field is touched with `lock` held (or in init and deinit).
    /// Where a line is: `ordinal` counts the lines of the spool in this run (from the first not
    /// delivered), for order; segment and offset are where it starts on disk.
    struct Position: Comparable, Sendable {
        var ordinal: UInt64
        var segment: UInt64
        var offset: UInt64
        static func < (a: Position, b: Position) -> Bool { a.ordinal < b.ordinal }
    }

    /// A segment file on disk: its number, its size, and the damaged stretches the reader skips.
    private struct Segment {
        let number: UInt64
        var size: UInt64
        var damaged: [Range<UInt64>] = []
    }

    let folder: String
    let maxBytes: UInt64
    private let files: PrivateFolder
    private let lock = SerialLock()
    private let segmentBytes: UInt64
    private let lockDescriptor: Int32
    private let cursorDescriptor: Int32
    /// Segment files on disk, in order.
    private var segments: [Segment] = []
    private var writeDescriptor: Int32 = -1
    /// The next line to read.
    private var reader: Position
    private var readDescriptor: (segment: UInt64, fd: Int32)?
    /// The first line not known to be delivered.
    private var cursor: Position
    private var savedCursor: (segment: UInt64, offset: UInt64)?
    private var cursorSavedAtNs: UInt64 = 0
    private var appended: UInt64
    /// Lines found in the spool when it was opened (an earlier run's).
    let recovered: Int
    private var dropped: (full: UInt64, damaged: UInt64) = (0, 0)
    private var full = false

    /// Opens (or makes) the spool in `folder`, and reads what an earlier run left there: damaged
    /// records are skipped and a line cut short at the end of a segment is cut off (each said on
    /// stderr, with what was kept, and counted as `damaged`).
    init(folder: String, maxBytes: UInt64, name: String) throws(OutputError) {
        self.folder = folder
        self.maxBytes = maxBytes
        segmentBytes = min(max(maxBytes / 16, 64 << 10), 16 << 20)
        do {
            files = try PrivateFolder(folder, role: "the spool folder", setting: "spool=")
        } catch {
            let untrusted = error.cause.map { $0.rawValue == ELOOP || $0.rawValue == ENOTDIR } ?? true
            throw OutputError(untrusted ? .untrustedFolder : .cannotOpen, error.description)
        }
        let lockFile = try Spool.open(files, "lock", O_RDWR | O_CREAT)
        if flock(lockFile, LOCK_EX | LOCK_NB) != 0 {
            close(lockFile)
            throw OutputError(.inUse, "the spool folder \(folder) is in use by another output or cvhost process: give each output a spool of its own (spool=)")
        }
        lockDescriptor = lockFile
        let cursorFD: Int32
        do { cursorFD = try Spool.open(files, "cursor", O_RDWR | O_CREAT) } catch {
            close(lockFile)
            throw error
        }
        cursorDescriptor = cursorFD

        // What an earlier run left: segments from the cursor's on. A cursor that names no segment
        // there (damaged, or from another spool) is ignored: every segment is sent from its start.
        let numbers = Spool.segmentNumbers(files.names())
        var start = (segment: numbers.first ?? 1, offset: UInt64(0))
        if let saved = Spool.readCursor(cursorFD) {
            if numbers.isEmpty || numbers.contains(saved.segment) {
                start = saved
            } else if saved.segment < numbers[0] {
                // Its segment was deleted, delivered, before the cursor was saved (a kill between): nothing is lost.
            } else {
                Log.warning("spool \(folder): its cursor names segment \(saved.segment), which is not there: every segment there is sent from its start", source: name)
            }
        }
        var lines = 0
        var found: [Segment] = []
        var damaged: UInt64 = 0
        for n in numbers {
            if n < start.segment {
                files.remove(Spool.fileName(n))
                continue
            }
            let from = n == start.segment ? start.offset : 0
            guard let r = Spool.recover(n, in: files, from: from, name: name) else { continue }
            if n == start.segment { start.offset = r.from }
            lines += r.lines
            damaged += r.damaged
            found.append(r.segment)
        }
        segments = found
        dropped.damaged = damaged
        recovered = lines
        appended = UInt64(lines)
        cursor = Position(ordinal: 0, segment: start.segment, offset: start.offset)
        reader = cursor
        if lines > 0 { Log.info("spool \(folder): \(lines) lines from an earlier run, sent first", source: name) }
        if dropped.damaged > 0 {
            Log.warning("spool \(folder): \(dropped.damaged) damaged stretches skipped (counted as spool_damaged); the lines around them are kept", source: name)
        }
        // Should it fail, deinit (which runs for an initializer that throws once every property is set) closes the files.
        let (next, overflow) = (segments.last?.number ?? 0).addingReportingOverflow(1)
        if overflow {
            throw OutputError(.exhausted, "the spool folder \(folder) holds a segment numbered \(UInt64.max), the last there can be: move its files away (spool=)")
        }
        try startSegment(next)
        if segments.count == 1 { cursor = Position(ordinal: 0, segment: segments[0].number, offset: 0); reader = cursor }
        saveCursor(force: true)
    }

    /// Reads segment `n` from `from` as an earlier run left it: its records counted, damaged
    /// stretches noted for the reader, what follows the last whole record cut off.
    /// - Returns: the segment, its lines from `from`, where reading starts and the damaged
    ///   stretches found; nil when it cannot be read.
    private static func recover(_ n: UInt64, in files: PrivateFolder, from: UInt64, name: String)
        -> (segment: Segment, lines: Int, from: UInt64, damaged: UInt64)? {
        let folder = files.path
        let fd: Int32
        switch files.open(Spool.fileName(n), O_RDWR) {
        case .success(let opened): fd = opened
        case .failure(let e):
            Log.warning("spool \(folder): segment \(n) cannot be read (\(e)): it is left as it is", source: name)
            return nil
        }
        defer { close(fd) }
        var info = stat()
        fstat(fd, &info)
        let size = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: size)
        guard bytes.withUnsafeMutableBytes({ SystemCall.readFully(fd, into: $0) }) == size else { return nil }
        let start = Int(min(from, UInt64(size)))
        let survey = SpoolRecord.survey(bytes[start...])
        let damaged = UInt64(survey.damaged.count)
        if survey.end < size {
            // Not counted as damage: a line being written when cvhost was killed, like the lines
            // still in its memory then, never reached the spool.
            ftruncate(fd, off_t(survey.end))
            Log.warning("spool \(folder): \(size - survey.end) bytes of a line cut short cut off from segment \(n) (\(survey.lines) lines before it kept)", source: name)
        }
        let segment = Segment(number: n, size: UInt64(survey.end), damaged: survey.damaged.map { UInt64($0.lowerBound)..<UInt64($0.upperBound) })
        return (segment, survey.lines, UInt64(start), damaged)
    }

    deinit {
        saveCursor(force: true)
        if writeDescriptor >= 0 { close(writeDescriptor) }
        if let r = readDescriptor { close(r.fd) }
        close(cursorDescriptor)
        close(lockDescriptor)  // and the lock with it
    }

    /// Lines in the spool not known to be delivered.
    var lineCount: Int { lock.run { Int(appended - cursor.ordinal) } }
    /// Lines in the spool not read yet (not yet sent in this run).
    var unread: Int { lock.run { Int(appended - reader.ordinal) } }
    var bytes: UInt64 { lock.run { usedBytes } }
    /// Lines not spooled because the spool was full.
    var droppedFull: UInt64 { lock.run { dropped.full } }
    /// Damaged stretches of the spool skipped (each at least one line lost).
    var damaged: UInt64 { lock.run { dropped.damaged } }
    /// Whether the last append dropped lines for room (a full spool is said once, not per line).
    var isFull: Bool { lock.run { full } }
    private var usedBytes: UInt64 { segments.reduce(0) { $0 + $1.size } }

    /// Appends lines at the end, in order. Lines that do not fit (`maxBytes`) are dropped, newest
    /// first, and counted. - Returns: the lines the disk refused (full, or failing), in order,
    /// from the first refused on: they are not in the spool.
    @discardableResult
    func append(_ lines: [OutputLine]) -> (refused: [OutputLine], why: Errno?) {
        guard !lines.isEmpty else { return ([], nil) }
        return lock.run { appendLocked(lines) }
    }

    private func appendLocked(_ lines: [OutputLine]) -> (refused: [OutputLine], why: Errno?) {
        var used = usedBytes
        var batch: [UInt8] = []
        var batchLines: [OutputLine] = []
        var overflow = false
        var why: Errno?
        func flushBatch() -> Bool {
            defer {
                batch.removeAll(keepingCapacity: true)
                batchLines.removeAll(keepingCapacity: true)
            }
            if let refused = write(batch) {
                why = refused
                return false
            }
            appended += UInt64(batchLines.count)
            return true
        }
        for (k, line) in lines.enumerated() {
            var record: [UInt8] = []
            if line.bytes.count <= SpoolRecord.largestPayload { SpoolRecord.append(line, to: &record) }
            if record.isEmpty || used + UInt64(record.count) > maxBytes {
                overflow = true
                dropped.full += 1
                continue
            }
            let current = segments[segments.count - 1]
            if current.size + UInt64(batch.count) >= segmentBytes {
                let inBatch = batchLines
                full = overflow
                guard flushBatch() else { return (inBatch + lines[k...], why) }
                // Numbers run out only for a folder that held a segment numbered near 2^64.
                let (next, exhausted) = current.number.addingReportingOverflow(1)
                do throws(OutputError) {
                    if exhausted { throw OutputError(.exhausted, "no segment number is left", cause: Errno(rawValue: EFBIG)) }
                    try startSegment(next)
                } catch {
                    return (Array(lines[k...]), error.cause ?? Errno(rawValue: EIO))
                }
            }
            used += UInt64(record.count)
            batch += record
            batchLines.append(line)
        }
        let inBatch = batchLines
        full = overflow
        return flushBatch() ? ([], nil) : (inBatch, why)
    }

    /// Up to `max` lines from the reader's place, in order, each with where it is.
    func read(max: Int) -> [(line: OutputLine, position: Position)] {
        lock.run { readLocked(max: max) }
    }

    private func readLocked(max: Int) -> [(line: OutputLine, position: Position)] {
        var out: [(line: OutputLine, position: Position)] = []
        while out.count < max {
            guard let i = segments.firstIndex(where: { $0.number == reader.segment }) else { break }
            if let hole = segments[i].damaged.first(where: { $0.contains(reader.offset) }) {
                reader.offset = hole.upperBound
                continue
            }
            // Records up to the next damaged stretch, or the end.
            let size = segments[i].damaged.lazy.map(\.lowerBound).filter { $0 > self.reader.offset }.min() ?? segments[i].size
            if reader.offset >= segments[i].size {
                guard i + 1 < segments.count else { break }
                reader.segment = segments[i + 1].number
                reader.offset = 0
                continue
            }
            let fd = readFile(reader.segment)
            guard fd >= 0 else { break }
            // A chunk of whole records, or the one record at the reader's place when it is larger.
            // (Read once; a second time only for one record larger than the chunk, at its own size.)
            var length = Int(min(size - reader.offset, 1 << 20))
            var chunk = [UInt8](repeating: 0, count: length)
            guard pread(fd, &chunk, length, off_t(reader.offset)) == length else { return out }
            if case .incomplete = SpoolRecord.decode(chunk[...]), length >= SpoolRecord.headerSize,
               case let whole = SpoolRecord.size(header: chunk[...]), whole > length, UInt64(whole) <= size - reader.offset {
                length = whole
                chunk = [UInt8](repeating: 0, count: length)
                guard pread(fd, &chunk, length, off_t(reader.offset)) == length else { return out }
            }
            var rest = chunk[...]
            var decoded = 0
            while out.count < max, case .line(let line, let size) = SpoolRecord.decode(rest) {
                out.append((line, reader))
                reader.ordinal += 1
                reader.offset += UInt64(size)
                rest = rest.dropFirst(size)
                decoded += 1
            }
            if decoded == 0 {
                // Changed under us (the spool is cvhost's alone): what is left of the segment is skipped.
                Log.warning("spool \(folder): segment \(reader.segment) is damaged at byte \(reader.offset): the rest of it is skipped (counted as spool_damaged)", source: folder)
                dropped.damaged += 1
                reader.offset = segments[i].size
            }
        }
        return out
    }

    /// Where the next line to read is: once every line read so far is delivered, the spool's delivered point.
    var readPosition: Position { lock.run { reader } }

    /// Every line before `position` is delivered: segments before its are deleted, and the cursor
    /// saved (at most every 50 ms: lines delivered since then are sent again after a kill).
    func delivered(upTo position: Position) {
        lock.run { deliveredLocked(upTo: position) }
    }

    private func deliveredLocked(upTo position: Position) {
        guard position.ordinal > cursor.ordinal else { return }
        cursor = position
        var removed = false
        while segments.count > 1 && segments[0].number < position.segment {
            files.remove(Spool.fileName(segments[0].number))
            segments.removeFirst()
            removed = true
        }
        saveCursor(force: removed)
    }

    /// Saves the cursor now (at the end of a run).
    func flush() { lock.run { saveCursor(force: true) } }

    // MARK: - Files

    /// A segment's file name: its number in 20 digits (so names sort as numbers), `.spool`.
    static func fileName(_ n: UInt64) -> String {
        let digits = String(n)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".spool"
    }

    /// The segment numbers among a folder's names, in order: only names cvhost writes (20 digits,
    /// `.spool`); others are left alone.
    static func segmentNumbers(_ names: [String]) -> [UInt64] {
        names.compactMap { name -> UInt64? in
            let digits = name.utf8.dropLast(6)
            guard name.hasSuffix(".spool"), digits.count == 20, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return UInt64(String(decoding: digits, as: UTF8.self))  // nil past UInt64.max
        }.sorted()
    }

    private static func open(_ files: PrivateFolder, _ name: String, _ flags: Int32) throws(OutputError) -> Int32 {
        switch files.open(name, flags) {
        case .success(let fd): return fd
        case .failure(let e):
            throw OutputError(.cannotOpen, "cannot use \(name) in the spool folder \(files.path) (spool=)", cause: e)
        }
    }

    private static func readCursor(_ fd: Int32) -> (segment: UInt64, offset: UInt64)? {
        var bytes = [UInt8](repeating: 0, count: 64)
        let n = pread(fd, &bytes, bytes.count, 0)
        guard n > 0 else { return nil }
        let words = String(decoding: bytes[0..<n], as: UTF8.self).split(whereSeparator: \.isWhitespace)
        guard words.count == 3, words[0] == "v1", let s = UInt64(words[1]), let o = UInt64(words[2]) else { return nil }
        return (s, o)
    }

    private func saveCursor(force: Bool) {
        let now = HostClock.monotonicNs()
        let at = (segment: cursor.segment, offset: cursor.offset)
        guard savedCursor.map({ $0 != at }) ?? true, force || now - cursorSavedAtNs >= 50_000_000 else { return }
        // One write of a fixed width: a kill never leaves half a cursor.
        var text = "v1 \(at.segment) \(at.offset)"
        text += String(repeating: " ", count: max(0, 47 - text.count)) + "\n"
        _ = text.utf8CString.withUnsafeBytes { pwrite(cursorDescriptor, $0.baseAddress, 48, 0) }
        savedCursor = at
        cursorSavedAtNs = now
    }

    /// A new segment, made (never one that is there already: O_EXCL) and written from now on.
    private func startSegment(_ n: UInt64) throws(OutputError) {
        let fd = try Spool.open(files, Spool.fileName(n), O_WRONLY | O_CREAT | O_EXCL | O_APPEND)
        if writeDescriptor >= 0 { close(writeDescriptor) }
        writeDescriptor = fd
        segments.append(Segment(number: n, size: 0))
    }

    private func readFile(_ n: UInt64) -> Int32 {
        if let r = readDescriptor, r.segment == n { return r.fd }
        if let r = readDescriptor { close(r.fd) }
        let fd = (try? Spool.open(files, Spool.fileName(n), O_RDONLY)) ?? -1
        readDescriptor = fd >= 0 ? (n, fd) : nil
        return fd
    }

    /// Writes records at the end of the last segment. - Returns: nil, or why the disk refused
    /// them (the segment is cut back to where it was: no record is left half written).
    private func write(_ batch: [UInt8]) -> Errno? {
        guard !batch.isEmpty else { return nil }
        let last = segments.count - 1
        var done = 0
        while done < batch.count {
            let (n, failure) = batch[done...].withUnsafeBytes { b in SystemCall.retrying { Glibc.write(writeDescriptor, b.baseAddress, b.count) } }
            guard n > 0 else {
                let why = failure ?? Errno(rawValue: ENOSPC)
                ftruncate(writeDescriptor, off_t(segments[last].size))
                return why
            }
            done += n
        }
        segments[last].size += UInt64(batch.count)
        return nil
    }
}
