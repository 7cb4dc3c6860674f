import CPluginGuard
import CVHostCore
import CVHostRun
import Dispatch
import Glibc
import Synchronization

/// SIGINT, SIGTERM and SIGHUP (a terminal or ssh session closed) while `cvhost run` runs: the
/// first asks the run to stop cleanly (`onFirst`: final metrics and
/// session.stopped are written); a second one, a deliberate second request, exits at once with
/// 130. Signals within `sameRequestNs` of the first are the same request: GNU timeout,
/// supervisors and group kills send one signal to the process and again to its group,
/// microseconds apart. SIGHUP stays ignored when cvhost was started ignoring it: that is what
/// `nohup cvhost …` asks (a closed terminal must not stop it). SIGINT and SIGTERM are always
/// handled (a shell script's background job starts with SIGINT ignored, yet is stopped by it).
/// With a config file (`onReload`), SIGHUP reloads it instead, as nginx and MediaMTX do
/// (`systemctl reload`): the run goes on, what changed is applied.
///
/// The executable's, not the library's: how the process answers signals and when it ends is its
/// decision (a program using CVHostRun calls `HostRun.requestStop` as it sees fit).
final class SignalHandler: @unchecked Sendable {
    // @unchecked Sendable: `sources` and `saved` are set once in init; DispatchSource objects are thread-safe.
    private let sources: [DispatchSourceSignal]
    private let saved: [(Int32, sigaction)]
    /// When the first signal came (monotonic ns); 0: none yet.
    private let firstAtNs = Atomic<UInt64>(0)
    /// Signals this soon after the first are repeats of it, not a second request.
    static let sameRequestNs: UInt64 = 1_000_000_000

    init(onReload: (@Sendable () -> Void)? = nil, onFirst: @escaping @Sendable () -> Void) {
        saved = [SIGINT, SIGTERM, SIGHUP].map { sig in
            var current = sigaction()
            sigaction(sig, nil, &current)
            return (sig, current)
        }
        let queue = DispatchQueue(label: "cvhost.signals")
        var made: [DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            if sig == SIGHUP && Self.isIgnored(sig) { continue }  // nohup
            signal(sig, SIG_IGN)
            made.append(DispatchSource.makeSignalSource(signal: sig, queue: queue))
        }
        sources = made
        for (source, sig) in zip(sources, [SIGINT, SIGTERM, SIGHUP]) {
            if sig == SIGHUP, let onReload {
                source.setEventHandler {
                    Log.info("SIGHUP: reloading the config file")
                    onReload()
                }
                source.resume()
                continue
            }
            source.setEventHandler { [weak self] in
                guard let self else { return }
                let now = HostClock.monotonicNs()
                let (first, _) = self.firstAtNs.compareExchange(expected: 0, desired: now, ordering: .relaxed)
                if first {
                    Log.info("stopping (signal again to exit at once)")
                    onFirst()
                } else if now - self.firstAtNs.load(ordering: .relaxed) < Self.sameRequestNs {
                    Log.debug("a signal again within a second of the first: the same stop")
                } else {
                    Log.warning("exiting without final metrics")
                    cvhost_guard_host_exiting()  // cvhost's own exit, not a plugin's
                    exit(ExitCodes.forcedStop)
                }
            }
            source.resume()
        }
    }

    /// Stops handling the signals and puts back what they did before.
    func cancel() {
        // The handlers hold the run (onFirst): let go of them too, not only of the sources, whose
        // cancellation completes later, on their queue.
        sources.forEach {
            $0.setEventHandler(handler: nil)
            $0.cancel()
        }
        for (sig, action) in saved {
            var action = action
            sigaction(sig, &action, nil)
        }
    }

    /// Whether the signal's disposition is SIG_IGN (function pointers are compared as addresses).
    static func isIgnored(_ sig: Int32) -> Bool {
        var current = sigaction()
        guard sigaction(sig, nil, &current) == 0 else { return false }
        return unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }
}
