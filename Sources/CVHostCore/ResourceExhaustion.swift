import Glibc

/// What cvhost does when the system refuses memory for a frame, or a thread, that the run needs
/// (a memory limit such as `ulimit -v`, a limit on processes, a full machine): one line on stderr
/// naming what could not be had and what to do, then the end of the process, which is the
/// executable's to make (`onExhausted`: `cvhost` exits with 7). The run cannot go on without the
/// frame or the thread, and Swift's own answers were worse: an allocation that fails traps (exit
/// 134 and a backtrace), and a Foundation Thread that cannot start is never run, without a word
/// (a run without its capture thread hung, deaf to signals).
public enum ResourceExhaustion {
    public static let exitCode: Int32 = 7

    /// Ends the process with `exitCode`: set once by the executable before anything runs (a
    /// program using these modules sets its own). Unset, the library traps with the message: it
    /// never exits the process itself.
    nonisolated(unsafe) public static var onExhausted: (@Sendable (Int32) -> Never)?

    /// Says what could not be had (`what`: "memory for a frame (12441600 bytes)", "a thread
    /// (cvhost.capture)") and why (`error`, an errno value), then hands the end to `onExhausted`.
    public static func report(_ what: String, error: Int32) -> Never {
        let message = "out of resources: \(what) could not be had (\(Errno(rawValue: error))): "
            + "give cvhost more memory or processes (ulimit -v, ulimit -u, the service's limits), or ask for less "
            + "(a smaller format, fewer plugins or instances)"
        Log.error(message)
        guard let end = onExhausted else { fatalError(message) }
        end(exitCode)
    }
}
