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
