import Glibc

/// What cvhost does when the system refuses memory for a frame, or a thread, that the run needs
/// (a memory limit such as `ulimit -v`, a limit on processes, a full machine): one line on stderr
/// naming what could not be had and what to do, and exit code 7. The run cannot go on without
/// the frame or the thread, and Swift's own answers were worse: an allocation that fails traps
/// (exit 134 and a backtrace), and a Foundation Thread that cannot start is never run, without a
/// word (a run without its capture thread hung, deaf to signals).
public enum ResourceExhaustion {
    public static let exitCode: Int32 = 7

    /// Says what could not be had (`what`: "memory for a frame (12441600 bytes)", "a thread
    /// (cvhost.capture)") and why (`error`, an errno value), and ends the process.
    public static func exit(_ what: String, error: Int32) -> Never {
        Log.error("out of resources: \(what) could not be had (\(String(cString: strerror(error)))): "
                  + "give cvhost more memory or processes (ulimit -v, ulimit -u, the service's limits), or ask for less "
                  + "(a smaller format, fewer plugins or instances)")
        _exit(exitCode)
    }
}
