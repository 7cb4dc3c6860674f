import CVHostCore
import Glibc

/// What every plugin worker writes to stdout and stderr (a traceback, a print(), onnxruntime's
/// messages), relayed to cvhost's stderr with its control characters shown, not obeyed: a
/// plugin's text, or a model's class names in it, must not move the user's cursor, retitle the
/// terminal or clear the screen. Tabs and newlines pass; every other C0 control, DEL and the C1
/// controls (U+0080-U+009F as UTF-8) are written `\xNN`, as `Log` writes text from outside.
///
/// One pipe for all workers (a write of up to PIPE_BUF bytes is never mixed with another's) and
/// one thread that reads it; what is still in the pipe when cvhost exits is written then (atexit),
/// so a worker's last words (its traceback) are not lost.
enum WorkerStderr {
    private static let relay: (read: Int32, write: Int32)? = {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        // Not inherited by any child as they are: a worker gets a copy as its 1 and 2.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let readEnd = fds[0]
        SystemThread.start("cvhost.worker-stderr") { relayForever(readEnd) }
        atexit { WorkerStderr.drain() }
        return (fds[0], fds[1])
    }()
    private static let lock = SerialLock()
    /// A UTF-8 lead byte (0xC2) read at the end of a chunk: whether a C1 control follows is in the next.
    nonisolated(unsafe) private static var heldLead = false

    /// The descriptor a worker's stdout and stderr are made from (-1: cvhost's own stderr, when
    /// no pipe could be made).
    static var descriptor: Int32 { relay?.write ?? -1 }

    private static func relayForever(_ fd: Int32) {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            if SystemCall.retrying({ poll(&p, 1, -1) }).result < 0 { return }
            lock.run { _ = pass(fd, waiting: true) }
        }
    }

    /// Writes what the pipe holds now (at exit).
    private static func drain() {
        guard let relay else { return }
        lock.run { while pass(relay.read, waiting: false) {} }
    }

    /// Reads one chunk (`waiting`: poll said there is one; else only what is there) and writes
    /// it shown. - Returns: whether there was one. Called with `lock` held (`heldLead` is its).
    private static func pass(_ fd: Int32, waiting: Bool) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16384)
        let n = chunk.withUnsafeMutableBytes { b in
            SystemCall.retrying { waiting ? read(fd, b.baseAddress, b.count) : readNow(fd, b) }.result
        }
        guard n > 0 else { return false }
        var out: [UInt8] = []
        out.reserveCapacity(n + 16)
        var i = 0
        if heldLead {
            heldLead = false
            if (0x80...0x9F).contains(chunk[0]) {
                out += escaped(chunk[0])
                i = 1
            } else {
                out.append(0xC2)
            }
        }
        while i < n {
            let b = chunk[i]
            if b == 0xC2 {
                if i + 1 == n {
                    heldLead = true
                } else if (0x80...0x9F).contains(chunk[i + 1]) {
                    out += escaped(chunk[i + 1])
                    i += 1
                } else {
                    out.append(b)
                }
            } else if (b < 0x20 && b != 0x0A && b != 0x09) || b == 0x7F {
                out += escaped(b)
            } else {
                out.append(b)
            }
            i += 1
        }
        out.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let (w, _) = SystemCall.retrying { write(STDERR_FILENO, raw.baseAddress! + done, raw.count - done) }
                if w <= 0 { return }
                done += w
            }
        }
        return true
    }

    /// A read that does not wait (O_NONBLOCK for the one read).
    private static func readNow(_ fd: Int32, _ b: UnsafeMutableRawBufferPointer) -> Int {
        let was = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, was | O_NONBLOCK)
        defer { _ = fcntl(fd, F_SETFL, was) }
        return read(fd, b.baseAddress, b.count)
    }

    private static func escaped(_ b: UInt8) -> [UInt8] { Array(Unicode.Scalar.escaped(b).utf8) }
}
