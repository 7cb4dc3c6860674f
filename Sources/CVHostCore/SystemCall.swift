import Glibc

/// The one place cvhost calls a system call again when a signal interrupted it (EINTR), as
/// swift-nio's `syscall(blocking:)` does: every read, write, poll and waitpid goes through it, and
/// the errno of a failure is read right after the call that failed (a later call may change it).
public enum SystemCall {
    /// Calls `body` (a call that returns -1 and sets errno when it fails) until it is not
    /// interrupted. - Returns: its result, and the errno when it failed.
    @discardableResult
    public static func retrying<R: SignedInteger>(_ body: () -> R) -> (result: R, error: Errno?) {
        while true {
            let r = body()
            guard r < 0 else { return (r, nil) }
            let e = errno
            if e != EINTR { return (r, Errno(rawValue: e)) }
        }
    }

    /// Reads `buffer.count` bytes of `fd` from `offset` (pread, as often as it takes).
    /// - Returns: how many were read: fewer at the end of the file or at an error.
    public static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int = 0) -> Int {
        var done = 0
        while done < buffer.count {
            let (n, _) = retrying { pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done)) }
            if n <= 0 { break }
            done += n
        }
        return done
    }

    /// Calls `body` (one of cvhost's C shims, which return -errno when the call fails: errno is read
    /// in C, right after the call) until it is not interrupted (-EINTR). - Returns: its result.
    public static func retryingNegated<R: SignedInteger>(_ body: () -> R) -> R {
        while true {
            let r = body()
            if r != -R(EINTR) { return r }
        }
    }

    /// Calls `body` (a call that returns its error number, as clock_nanosleep and the pthread
    /// calls do) until it is not interrupted. - Returns: 0, or the error.
    @discardableResult
    public static func retryingReturned(_ body: () -> Int32) -> Int32 {
        while true {
            let e = body()
            if e != EINTR { return e }
        }
    }
}
