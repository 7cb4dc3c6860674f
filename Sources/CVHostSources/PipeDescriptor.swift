import CVHostCore
import Glibc

/// Standard input or a named pipe, opened so that nothing blocks for ever: a FIFO's open(2)
/// waits in the kernel for a writer and FFmpeg's pipe reads wait for data, and neither heeds
/// FFmpeg's interrupt callback. So the descriptor is made non-blocking (FFmpeg then retries a read
/// that would block, asking its interrupt callback each time), and the open waits for the first
/// data with poll(2), bounded by the open timeout.
enum PipeDescriptor {
    /// A readable, non-blocking descriptor holding data (or at its end); the caller hands it to
    /// FFmpeg as `pipe:FD` and closes it (unless it is standard input) when done.
    /// - Throws: `.inputUnavailable` when it cannot be opened, is a terminal, or no data comes within `timeout` seconds.
    static func open(_ location: StreamLocation, timeout: Double, interrupt: InterruptDeadline) throws -> Int32 {
        let fd: Int32
        switch location.kind {
        case .standardInput:
            guard isatty(STDIN_FILENO) == 0 else {
                throw CaptureError(.inputUnavailable, "standard input is a terminal: pipe a stream into cvhost (e.g. ffmpeg -i SRC -f mpegts - | cvhost run ... --input -)")
            }
            fd = STDIN_FILENO
        case .namedPipe:
            fd = Glibc.open(location.display, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else {
                throw CaptureError(.inputUnavailable, "cannot open \(location.display)", cause: .current)
            }
        case .network:
            preconditionFailure("PipeDescriptor opens pipes only")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        // Wait for data (or a writer that came and went) without blocking past the timeout or a stop.
        let until = HostClock.monotonicNs() + UInt64(timeout * 1e9)
        while true {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let (ready, _) = SystemCall.retrying { poll(&p, 1, 100) }
            if ready > 0 { return fd }
            if ready < 0 { break }
            if interrupt.isCancelled || HostClock.monotonicNs() >= until { break }
        }
        if fd != STDIN_FILENO { close(fd) }
        throw CaptureError(.inputUnavailable, "no data on \(location.display) within \(formatSeconds(timeout)) (--open-timeout): is anything writing to it?")
    }
}
