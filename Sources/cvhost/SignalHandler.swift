import Dispatch
import Glibc
import CPluginGuard
import CVHostCore
import Synchronization

/// SIGINT, SIGTERM and SIGHUP (a terminal or ssh session closed, a service reloaded): the first
/// asks the session to stop cleanly (final metrics and session.stopped are written); a second one
/// exits at once with 130.
final class SignalHandler: @unchecked Sendable {
    // @unchecked Sendable: `sources` is set once in init; DispatchSource objects are thread-safe.
    private let sources: [DispatchSourceSignal]
    private let count = Atomic(0)

    init(onFirst: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "cvhost.signals")
        var made: [DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM, SIGHUP] {
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
}
