import Dispatch
import Glibc
import CPluginGuard
import CVHostCore
import Synchronization

/// SIGINT, SIGTERM and SIGHUP (a terminal or ssh session closed, a service reloaded): the first
/// asks the session to stop cleanly (final metrics and session.stopped are written); a second one
/// exits at once with 130. SIGHUP stays ignored when cvhost was started ignoring it: that is what
/// `nohup cvhost …` asks (a closed terminal must not stop it). SIGINT and SIGTERM are always
/// handled (a shell script's background job starts with SIGINT ignored, yet is stopped by it).
public final class SignalHandler: @unchecked Sendable {
    // @unchecked Sendable: `sources` is set once in init; DispatchSource objects are thread-safe.
    private let sources: [DispatchSourceSignal]
    private let count = Atomic(0)

    init(onFirst: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "cvhost.signals")
        var made: [DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            if sig == SIGHUP && Self.isIgnored(sig) { continue }  // nohup
            signal(sig, SIG_IGN)
            made.append(DispatchSource.makeSignalSource(signal: sig, queue: queue))
        }
        sources = made
        for source in sources {
            source.setEventHandler { [weak self] in
                guard let self else { return }
                if self.count.add(1, ordering: .relaxed).newValue == 1 {
                    Log.info("stopping (signal again to exit at once)")
                    onFirst()
                } else {
                    Log.warning("exiting without final metrics")
                    cvhost_guard_host_exiting()  // cvhost's own exit, not a plugin's
                    exit(ExitCodes.forcedStop)
                }
            }
            source.resume()
        }
    }

    func cancel() { sources.forEach { $0.cancel() } }

    /// The dispositions of SIGINT, SIGTERM and SIGHUP now; `restore` puts them back. A run in a
    /// process that goes on afterwards (a test, a program using CVHostRun) leaves them as it found
    /// them: an ignored SIGHUP would else be inherited by every process started later.
    static func saveDispositions() -> [(Int32, sigaction)] {
        [SIGINT, SIGTERM, SIGHUP].map { sig in
            var current = sigaction()
            sigaction(sig, nil, &current)
            return (sig, current)
        }
    }

    static func restore(_ saved: [(Int32, sigaction)]) {
        for (sig, action) in saved {
            var action = action
            sigaction(sig, &action, nil)
        }
    }

    /// Whether the signal's disposition is SIG_IGN (function pointers are compared as addresses).
    public static func isIgnored(_ sig: Int32) -> Bool {
        var current = sigaction()
        guard sigaction(sig, nil, &current) == 0 else { return false }
        return unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }
}
