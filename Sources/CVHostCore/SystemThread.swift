import Glibc

/// A thread of cvhost's own (capture, a plugin's delivery queue, an output's writer, ...), made
/// with pthread_create so that a thread the system refuses is known: Foundation's Thread.start()
/// says nothing when it cannot make one, and the work it was for never happens. A thread that
/// cannot be made ends the run (ResourceExhaustion, exit 7).
public enum SystemThread {
    /// Runs `body` on a new, detached thread named `name` (the first 15 bytes: what `top -H` and
    /// a debugger show).
    public static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            let body = Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue()
            SystemThread.name(body.name)
            body.run()
            return nil
        }, box)
        guard status == 0 else {
            Unmanaged<Body>.fromOpaque(box).release()
            ResourceExhaustion.report("a thread (\(name))", error: status)
        }
        pthread_detach(thread)
    }

    /// The calling thread's name, as pthread_setname_np sets it (a GNU call Swift's Glibc module
    /// does not show): written to /proc/thread-self/comm.
    private static func name(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    private final class Body {
        let name: String
        let run: @Sendable () -> Void
        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }
}
