import CVHostCore
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
/// its files are the user's alone (0700, 0600): results may be private.
///
/// Bounded by `maxBytes`: a line that does not fit is not spooled, and is counted (`droppedFull`):
/// the oldest lines, which the broker is waiting for, are kept, and the newest are lost while the
/// spool is full. Thread-safe: the sink's spool writer appends while its sender reads.
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

    struct OpenError: Error, CustomStringConvertible {
        let description: String
    }

    let folder: String
    let maxBytes: UInt64
    private let lock = SerialLock()
    private let segmentBytes: UInt64
    private let lockDescriptor: Int32
    private let cursorDescriptor: Int32
    /// Segment files on disk, in order, and their sizes.
    private var segments: [(number: UInt64, size: UInt64)] = []
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
    private var dropped: (full: UInt64, writeFailed: UInt64) = (0, 0)
    private var full = false

    /// Opens (or makes) the spool in `folder`, and reads what an earlier run left there: a line cut
    /// short at the end of a segment is cut off (said on stderr, with what was kept).
    init(folder: String, maxBytes: UInt64, name: String) throws(OpenError) {
        self.folder = folder
        self.maxBytes = maxBytes
        segmentBytes = min(max(maxBytes / 16, 64 << 10), 16 << 20)
        if mkdir(folder, 0o700) != 0 && errno != EEXIST {
            throw OpenError(description: "cannot make the spool folder \(folder): \(Errno.current) (spool=)")
        }
        let lockFile = open(folder + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockFile >= 0 else { throw OpenError(description: "cannot use the spool folder \(folder): \(Errno.current) (spool=)") }
        if flock(lockFile, LOCK_EX | LOCK_NB) != 0 {
            close(lockFile)
            throw OpenError(description: "the spool folder \(folder) is in use by another output or cvhost process: give each output a spool of its own (spool=)")
        }
        lockDescriptor = lockFile
        let cursorFD = open(folder + "/cursor", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard cursorFD >= 0 else {
            close(lockFile)
            throw OpenError(description: "cannot write in the spool folder \(folder): \(Errno.current) (spool=)")
        }
        cursorDescriptor = cursorFD

        // What an earlier run left: segments from the cursor's on.
        var numbers = Spool.segmentNumbers(in: folder)
        var start = Spool.readCursor(cursorFD) ?? (numbers.first ?? 1, 0)
        for n in numbers where n < start.segment { unlink(Spool.path(folder, n)) }
        numbers.removeAll { $0 < start.segment }
        if let first = numbers.first, first != start.segment { start = (first, 0) }
        var lines = 0
        for n in numbers {
            let from = n == start.segment ? start.offset : 0
            let (count, validEnd, size) = Spool.scan(Spool.path(folder, n), from: from)
            if validEnd < size {
                truncate(Spool.path(folder, n), off_t(validEnd))
                Log.warning("spool \(folder): \(size - validEnd) bytes of a line cut short cut off from segment \(n) (\(count) lines before it kept)", source: name)
            }
            if n == start.segment { start.offset = min(from, validEnd) }
            lines += count
            segments.append((n, validEnd))
        }
        recovered = lines
        appended = UInt64(lines)
        cursor = Position(ordinal: 0, segment: start.segment, offset: start.offset)
        reader = cursor
        if lines > 0 { Log.info("spool \(folder): \(lines) lines from an earlier run, sent first", source: name) }
        // Should it fail, deinit (which runs for an initializer that throws once every property is set) closes the files.
        try startSegment((segments.last?.number ?? 0) + 1)
        if segments.count == 1 { cursor = Position(ordinal: 0, segment: segments[0].number, offset: 0); reader = cursor }
        saveCursor(force: true)
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
    /// Lines not spooled because the disk refused them (full, or failing).
    var writeFailed: UInt64 { lock.run { dropped.writeFailed } }
    /// Whether the last append dropped lines for room (a full spool is said once, not per line).
    var isFull: Bool { lock.run { full } }
    private var usedBytes: UInt64 { segments.reduce(0) { $0 + $1.size } }

    /// Appends lines at the end, in order. Lines that do not fit (`maxBytes`) are dropped, newest
    /// first, and counted; so are lines the disk refuses.
    func append(_ lines: [OutputLine]) {
        guard !lines.isEmpty else { return }
        lock.run { appendLocked(lines) }
    }

    private func appendLocked(_ lines: [OutputLine]) {
        var used = usedBytes
        var batch: [UInt8] = []
        var inBatch = 0
        var overflow = false
        func flushBatch() {
            if write(batch) { appended += UInt64(inBatch) } else { dropFailed(inBatch) }
            batch.removeAll(keepingCapacity: true)
            inBatch = 0
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
                flushBatch()
                do { try startSegment(current.number + 1) } catch {
                    Log.warning(error.description, source: folder)
                    return dropFailed(lines.count - k)
                }
            }
            used += UInt64(record.count)
            batch += record
            inBatch += 1
        }
        flushBatch()
        full = overflow
    }

    /// Up to `max` lines from the reader's place, in order, each with where it is.
    func read(max: Int) -> [(line: OutputLine, position: Position)] {
        lock.run { readLocked(max: max) }
    }

    private func readLocked(max: Int) -> [(line: OutputLine, position: Position)] {
        var out: [(line: OutputLine, position: Position)] = []
        while out.count < max {
            guard let i = segments.firstIndex(where: { $0.number == reader.segment }) else { break }
            let size = segments[i].size
            if reader.offset >= size {
                guard i + 1 < segments.count else { break }
                reader.segment = segments[i + 1].number
                reader.offset = 0
                continue
            }
            let fd = readFile(reader.segment)
            guard fd >= 0 else { break }
            // A chunk of whole records, or the one record at the reader's place when it is larger.
            var length = Int(min(size - reader.offset, 1 << 20))
            var chunk = [UInt8](repeating: 0, count: length)
            for attempt in 0..<2 {
                chunk = [UInt8](repeating: 0, count: length)
                guard pread(fd, &chunk, length, off_t(reader.offset)) == length else { return out }
                guard attempt == 0, case .incomplete = SpoolRecord.decode(chunk[...]), length >= SpoolRecord.headerSize else { break }
                length = SpoolRecord.size(header: chunk[...])
                guard UInt64(length) <= size - reader.offset else { break }
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
                Log.warning("spool \(folder): segment \(reader.segment) is damaged at byte \(reader.offset): the rest of it is skipped", source: folder)
                reader.offset = size
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
            unlink(Spool.path(folder, segments[0].number))
            segments.removeFirst()
            removed = true
        }
        saveCursor(force: removed)
    }

    /// Saves the cursor now (at the end of a run).
    func flush() { lock.run { saveCursor(force: true) } }

    // MARK: - Files

    private static func path(_ folder: String, _ n: UInt64) -> String {
        let digits = String(n)
        return folder + "/" + String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".spool"
    }

    private static func segmentNumbers(in folder: String) -> [UInt64] {
        guard let dir = opendir(folder) else { return [] }
        defer { closedir(dir) }
        var numbers: [UInt64] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(".spool"), let n = UInt64(name.dropLast(6)) { numbers.append(n) }
        }
        return numbers.sorted()
    }

    /// Lines in a segment from `offset`, where the last whole one ends, and the file's size.
    private static func scan(_ path: String, from offset: UInt64) -> (lines: Int, validEnd: UInt64, size: UInt64) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return (0, 0, 0) }
        defer { close(fd) }
        var st = stat()
        fstat(fd, &st)
        let size = UInt64(st.st_size)
        var at = min(offset, size)
        var lines = 0
        var header = [UInt8](repeating: 0, count: SpoolRecord.headerSize)
        while at < size {
            guard pread(fd, &header, header.count, off_t(at)) == header.count else { break }
            let length = SpoolRecord.size(header: header[...])
            guard length > SpoolRecord.headerSize, UInt64(length) <= size - at else { break }
            var record = [UInt8](repeating: 0, count: length)
            guard pread(fd, &record, record.count, off_t(at)) == record.count,
                  case .line = SpoolRecord.decode(record[...]) else { break }
            at += UInt64(record.count)
            lines += 1
        }
        return (lines, at, size)
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

    private func startSegment(_ n: UInt64) throws(OpenError) {
        let fd = open(Spool.path(folder, n), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw OpenError(description: "cannot write in the spool folder \(folder): \(Errno.current) (spool=)") }
        if writeDescriptor >= 0 { close(writeDescriptor) }
        writeDescriptor = fd
        segments.append((n, 0))
    }

    private func readFile(_ n: UInt64) -> Int32 {
        if let r = readDescriptor, r.segment == n { return r.fd }
        if let r = readDescriptor { close(r.fd) }
        let fd = open(Spool.path(folder, n), O_RDONLY | O_CLOEXEC)
        readDescriptor = fd >= 0 ? (n, fd) : nil
        return fd
    }

    /// Writes records at the end of the last segment. - Returns: false if the disk refused
    /// them (the segment is cut back to where it was: no record is left half written).
    private func write(_ batch: [UInt8]) -> Bool {
        guard !batch.isEmpty else { return true }
        let last = segments.count - 1
        var done = 0
        while done < batch.count {
            let n = batch[done...].withUnsafeBytes { Glibc.write(writeDescriptor, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                ftruncate(writeDescriptor, off_t(segments[last].size))
                return false
            }
            done += n
        }
        segments[last].size += UInt64(batch.count)
        return true
    }

    private func dropFailed(_ n: Int) {
        if dropped.writeFailed == 0 { Log.warning("spool \(folder): the disk refused lines (\(Errno.current)); they are counted as write_failed", source: folder) }
        dropped.writeFailed += UInt64(n)
    }
}
