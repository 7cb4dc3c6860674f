import CPluginGuard
import CVHostCore
import CVHostLines
import Glibc

/// Writes JSON Lines to a file descriptor (stdout): one whole line per write(2), so lines from
/// different threads never interleave and nothing waits in a buffer (a consumer reading a
/// pipe sees each line at once; a killed process loses no written line).
///
/// When a write fails, the writer turns quiet: later lines are discarded and `onClosed` runs
/// once, so the run can end; `failure` tells why. EPIPE means the reader went away (a clean
/// end); anything else (ENOSPC, EIO) means lines were lost. SIGPIPE must be ignored by the process.
///
/// A reader that stops reading holds the writes back (back-pressure: `cvhost run | consumer`
/// relies on it) until the run is asked to stop: from then on (`giveUp(atNs:)`), a pipe that takes
/// nothing more by that time ends the writes (`ETIMEDOUT`): the lines are counted as lost and the
/// run can end (exit 4), whatever the reader does.
public final class JSONLineWriter: OutputSink {
    private let fd: Int32
    /// Held across write(2), so that lines never interleave. Only writers wait on it.
    private let writing = SerialLock()
    /// Never held across I/O: what the metrics and the run read (`statistics`, `failure`) never
    /// waits for a write that blocks (a reader that stopped reading holds a write for as long as
    /// it likes; /metrics and the periodic metrics must still answer meanwhile).
    private let state = Locked(State())
    private let onClosed: @Sendable () -> Void

    private struct State {
        var closed = false
        var failure: Int32?
        var written: UInt64 = 0
        var discarded: UInt64 = 0
        /// When a write still waiting for the reader gives up (monotonic ns); nil: it waits.
        var giveUpAtNs: UInt64?
    }

    public init(fileDescriptor: Int32 = STDOUT_FILENO, onClosed: @escaping @Sendable () -> Void = {}) {
        self.fd = fileDescriptor
        self.onClosed = onClosed
        var st = stat(), err = stat()
        // Only a pipe's writing end that cvhost alone holds (a terminal or a file does not stall
        // for ever). Not one that stderr shares (`2>&1 | reader`): stderr is also the stdout of
        // plugins and their workers, whose writes must keep blocking as they always did.
        let sharedWithStderr = fstat(STDERR_FILENO, &err) == 0
        let isPipe = fstat(fileDescriptor, &st) == 0 && (st.st_mode & S_IFMT) == S_IFIFO
            && !(sharedWithStderr && err.st_dev == st.st_dev && err.st_ino == st.st_ino)
        if isPipe { _ = fcntl(fileDescriptor, F_SETFL, fcntl(fileDescriptor, F_GETFL) | O_NONBLOCK) }
    }

    /// From `deadline` (monotonic ns) on, a write the reader does not take ends the writes:
    /// call when the run is asked to stop. The earliest deadline given holds.
    public func giveUp(atNs deadline: UInt64) {
        state.withLock { s in s.giveUpAtNs = min(s.giveUpAtNs ?? .max, deadline) }
    }

    /// The reader stopped reading and the run was stopping: the lines from then on were dropped.
    public var readerStalled: Bool { failure == ETIMEDOUT }

    /// The errno of the write that failed, or nil while every line was written.
    public var failure: Int32? { state.withLock { $0.failure } }

    /// Whether a write failed for another reason than the reader going away: lines were lost.
    public var lostLines: Bool { failure.map { $0 != EPIPE } ?? false }

    /// Lines written, and lines discarded after a write failed (the metrics' `output` section).
    public func statistics(name: String) -> SinkStatistics {
        let s = state.withLock { $0 }
        var out = SinkStatistics(output: name)
        out.delivered = s.written
        out.dropped = [.writeFailed: s.discarded]
        return out
    }

    /// Writes one line. Thread-safe.
    public func write(_ line: OutputLine) {
        writeLine(line.bytes)
    }

    /// Writes bytes that already form one line ending in "\n".
    public func writeLine(_ line: [UInt8]) {
        let justClosed: Bool = writing.run {
            guard !state.withLock({ s in
                if s.closed { s.discarded += 1 }
                return s.closed
            }) else { return false }
            // A plugin crashing meanwhile must not write its session.error into this line.
            cvhost_guard_output_begin()
            defer { cvhost_guard_output_end() }
            let error = line.withUnsafeBytes { raw -> Int32? in
                var offset = 0
                while offset < raw.count {
                    let (n, failure) = SystemCall.retrying { Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset) }
                    if let failure {
                        guard failure.rawValue == EAGAIN else { return failure.rawValue }
                        // The pipe is full: wait for the reader, a tenth of a second at a time.
                        if let at = state.withLock({ $0.giveUpAtNs }), HostClock.monotonicNs() >= at { return ETIMEDOUT }
                        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                        _ = poll(&p, 1, 100)
                        continue
                    }
                    offset += n
                }
                return nil
            }
            return state.withLock { s in
                guard let error else {
                    s.written += 1
                    return false
                }
                s.discarded += 1
                s.closed = true
                s.failure = error
                return true
            }
        }
        if justClosed { onClosed() }
    }
}
