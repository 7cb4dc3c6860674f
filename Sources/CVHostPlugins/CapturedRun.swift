import CVHostCore
import CWorkerIPC
import Glibc

/// A short helper program run to its end with its stdout and stderr read (a Python plugin's
/// description), bounded in time and ended at once when the caller says stop.
struct CapturedRun {
    enum Ending {
        /// It ended by itself: its exit status (128 + N for a signal), what it printed and said.
        case exited(status: Int32, stdout: [UInt8], stderr: [UInt8])
        /// It outlasted `timeoutSeconds`, or `stopRequested` said so: it was killed (its group too).
        case timedOut, stopped
    }

    /// - Throws: `Errno` when it cannot be started (no such program, no process or descriptor left).
    static func run(_ executable: String, _ arguments: [String], environment: [String: String], folder: String,
                    timeoutSeconds: Double, stopRequested: () -> Bool) throws(Errno) -> Ending {
        // Close-on-exec (a worker started meanwhile must not hold them: their end would never come);
        // the helper gets its ends through dup2, which clears the flag.
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1]
        guard pipe(&out) == 0 else { throw Errno.current }
        guard pipe(&err) == 0 else {
            let e = Errno.current
            out.forEach { close($0) }
            throw e
        }
        for fd in out + err { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = PathText.withFileSystemPath(folder) { cwd in cvhost_spawn_captured(executable, &argv, &envp, cwd, out[1], err[1], &pid) }
        close(out[1])
        close(err[1])
        defer {
            close(out[0])
            close(err[0])
        }
        guard rc == 0 else { throw Errno(rawValue: rc) }

        // Both pipes are read while it runs: one that prints much at import cannot block on a full pipe.
        var collected: [[UInt8]] = [[], []]
        var open = [true, true]
        let deadline = HostClock.monotonicNs() + UInt64(timeoutSeconds * 1e9)
        var ending: Ending?
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while open.contains(true) {
            if stopRequested() { ending = .stopped } else if HostClock.monotonicNs() >= deadline { ending = .timedOut }
            if ending != nil { break }
            var polls = [pollfd(fd: open[0] ? out[0] : -1, events: Int16(POLLIN), revents: 0),
                         pollfd(fd: open[1] ? err[0] : -1, events: Int16(POLLIN), revents: 0)]
            guard poll(&polls, 2, 100) > 0 else { continue }
            for i in 0..<2 where open[i] && polls[i].revents != 0 {
                let (n, _) = SystemCall.retrying { read(polls[i].fd, &buffer, buffer.count) }
                if n > 0 { collected[i] += buffer[..<n] } else { open[i] = false }
            }
        }
        if ending != nil { kill(-pid, SIGKILL) }
        var status: Int32 = 0
        SystemCall.retrying { waitpid(pid, &status, 0) }
        // What it started in its group ends with it.
        kill(-pid, SIGKILL)
        if let ending { return ending }
        let signal = status & 0x7F
        return .exited(status: signal != 0 ? 128 + signal : (status >> 8) & 0xFF, stdout: collected[0], stderr: collected[1])
    }
}
