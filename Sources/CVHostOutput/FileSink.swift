import CVHostCore
import CVHostLines
import Foundation
import Glibc

/// `--output file:PATH`: JSON Lines appended to a file, rotated by size (PATH.1 is the newest of
/// the rotated files, PATH.keep the oldest; older ones are removed), like a log that logrotate
/// would keep. The file is opened at start (a path that cannot be opened ends the run before it
/// starts); a failed write (a full disk) drops those lines, counted as `write_failed`, and the
/// next lines are tried again. The file only ever holds whole lines: a line cut short by a full
/// disk is removed again, so lines written after space is freed start on a line of their own.
final class FileSink: LineQueueBacked, @unchecked Sendable {
    // @unchecked Sendable: `fd` and `size` belong to the sink's thread; the rest is immutable or locked.
    let name: String
    private let settings: OutputDestination.FileSettings
    let queue: LineQueue
    private let thread = SinkThreadState()
    private let counts = Locked((delivered: UInt64(0), writeFailed: UInt64(0), unsent: UInt64(0)))
    private var fd: Int32
    private var size: UInt64
    private var lastError: Int32 = 0

    /// - Parameter readerTimeout: how long a named pipe may wait for its reader (--open-timeout).
    init(_ settings: OutputDestination.FileSettings, name: String, readerTimeout: Double = 10) throws(OutputError) {
        self.settings = settings
        self.name = name
        queue = LineQueue(capacity: settings.queue.capacity)
        fd = try FileSink.isNamedPipe(settings.path) ? FileSink.openPipe(settings.path, timeout: readerTimeout) : FileSink.open(settings.path)
        guard fd >= 0 else {
            throw OutputError(.cannotOpen, "cannot open \(settings.path) for --output", cause: .current)
        }
        var st = stat()
        size = fstat(fd, &st) == 0 ? UInt64(st.st_size) : 0
        SystemThread.start("cvhost-output-file") { [self] in run() }
    }

    private static func open(_ path: String) -> Int32 {
        Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
    }

    private static func isNamedPipe(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFIFO
    }

    /// A named pipe's open blocks until a reader opens it, deaf to a stop and saying nothing: it is
    /// opened without blocking instead (ENXIO while no reader has it open), looked at again every
    /// 0.1 s, said once on stderr, and refused after `timeout` seconds. Writes then block as to a file.
    private static func openPipe(_ path: String, timeout: Double) throws(OutputError) -> Int32 {
        let deadline = HostClock.monotonicNs() + UInt64(timeout * 1e9)
        var said = false
        while true {
            let fd = Glibc.open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if fd >= 0 {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
                return fd
            }
            guard errno == ENXIO else { return -1 }
            if HostClock.monotonicNs() >= deadline {
                throw OutputError(.cannotOpen, "--output file:\(path) is a named pipe that no reader opened within \(timeout) s "
                                + "(--open-timeout): start its reader first")
            }
            if !said {
                Log.info("--output file:\(path) is a named pipe: waiting up to \(timeout) s for its reader")
                said = true
            }
            usleep(100_000)
        }
    }

    var queueSettings: OutputDestination.QueueSettings { settings.queue }

    var statistics: SinkStatistics {
        let c = counts.withLock { $0 }
        var s = SinkStatistics(output: name)
        s.delivered = c.delivered
        s.queued = queue.count
        s.dropped = [.queueFull: queue.droppedFull, .writeFailed: c.writeFailed, .unsent: c.unsent]
        return s
    }

    func finish(deadlineNs: UInt64) -> SinkStatistics {
        thread.requestFinish(deadlineNs: deadlineNs)
        queue.wake()
        if !thread.waitEnded(untilNs: deadlineNs) {
            // A disk that hangs: what still waits is lost, and said so.
            let left = UInt64(queue.count)
            counts.withLock { $0.unsent += left }
        }
        return statistics
    }

    private func run() {
        defer { thread.markEnded() }
        var poller = pollfd(fd: queue.wakeDescriptor, events: Int16(POLLIN), revents: 0)
        while true {
            queue.clearWake()
            var lines = queue.popFront(max: 4096)
            while !lines.isEmpty {
                append(lines)
                lines = queue.popFront(max: 4096)
            }
            if let deadline = thread.finishDeadline {
                if queue.count == 0 || HostClock.monotonicNs() >= deadline { break }
                continue
            }
            _ = poll(&poller, 1, -1)
        }
        let left = UInt64(queue.popFront(max: Int.max).count)
        counts.withLock { $0.unsent += left }
        close(fd)
    }

    /// Writes lines, rotating the file before a line that would take it past max_mb.
    private func append(_ lines: [OutputLine]) {
        var batch = Batch()
        for line in lines {
            if settings.maxBytes > 0, size > 0, size + UInt64(batch.bytes.count + line.bytes.count) > settings.maxBytes {
                flush(&batch)
                rotate()
            }
            batch.append(line)
        }
        flush(&batch)
    }

    /// Lines to write at once, with where each ends: a write that stops part-way (a full disk)
    /// is counted by the lines it wrote whole.
    private struct Batch {
        var bytes: [UInt8] = []
        var lineEnds: [Int] = []

        mutating func append(_ line: OutputLine) {
            bytes.append(contentsOf: line.bytes)
            lineEnds.append(bytes.count)
        }

        /// How many lines the first `written` bytes hold whole, and the bytes they take.
        func whole(within written: Int) -> (lines: Int, bytes: Int) {
            let lines = lineEnds.prefix { $0 <= written }.count
            return (lines, lines == 0 ? 0 : lineEnds[lines - 1])
        }
    }

    private func flush(_ batch: inout Batch) {
        guard !batch.bytes.isEmpty else { return }
        var written = 0
        let error: Int32? = batch.bytes.withUnsafeBytes { raw in
            while written < raw.count {
                let (n, failure) = SystemCall.retrying { Glibc.write(fd, raw.baseAddress! + written, raw.count - written) }
                if let failure { return failure.rawValue }
                written += n
            }
            return nil
        }
        let whole = batch.whole(within: written)
        if let error {
            // A line cut short would have the next line that fits glued to it: the file goes
            // back to the end of its last whole line.
            if written > whole.bytes { cutPartialLine(bytes: written - whole.bytes) }
            // One message per kind of failure, and one when writes work again.
            if error != lastError { Log.error("cannot write to \(settings.path): \(Errno(rawValue: error).description); lines are dropped until it works again", source: name) }
            lastError = error
        } else if lastError != 0 {
            Log.info("writing to \(settings.path) again", source: name)
            lastError = 0
        }
        size += UInt64(whole.bytes)
        let failed = batch.lineEnds.count - whole.lines
        counts.withLock {
            $0.delivered += UInt64(whole.lines)
            $0.writeFailed += UInt64(failed)
        }
        batch = Batch()
    }

    /// Removes the last `bytes` bytes of the file: the start of a line whose write failed.
    private func cutPartialLine(bytes: Int) {
        var st = stat()
        if fstat(fd, &st) != 0 || ftruncate(fd, st.st_size - off_t(bytes)) != 0 {
            Log.error("cannot remove a partly written line from \(settings.path): \(Errno.current.description)", source: name)
        }
    }

    /// PATH.(keep-1) -> PATH.keep, ..., PATH -> PATH.1, and a new PATH.
    private func rotate() {
        let path = settings.path
        for i in stride(from: settings.keep - 1, through: 1, by: -1) {
            _ = rename("\(path).\(i)", "\(path).\(i + 1)")
        }
        guard rename(path, "\(path).1") == 0 else {
            Log.warning("cannot rotate \(path): \(Errno.current.description); it grows on", source: name)
            size = 0
            return
        }
        let next = FileSink.open(path)
        if next >= 0 {
            close(fd)
            fd = next
        } else {
            Log.error("cannot open a new \(path) after rotating it: \(Errno.current.description); writing on to \(path).1", source: name)
        }
        size = 0
    }
}
