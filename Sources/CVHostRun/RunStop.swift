import CVHostCore

/// Stops every input of a run at once (a signal, --duration, stdout closed). A stop asked for
/// while an input is still starting reaches it as soon as it runs (`started`); an input added
/// while the run goes on is stopped with the others (`add`).
final class RunStop: Sendable {
    private let sessions: Locked<[CaptureSession]>
    private let reason = Locked<(why: StopReason, atNs: UInt64)?>(nil)
    /// Told once, at the first request (or at once, if it came before).
    private let listeners = Locked<[@Sendable () -> Void]>([])

    init(sessions: [CaptureSession]) { self.sessions = Locked(sessions) }

    func request(_ why: StopReason) {
        let first = reason.withLock { r -> Bool in
            guard r == nil else { return false }
            r = (why, HostClock.monotonicNs())
            return true
        }
        sessions.withLock { $0 }.forEach { $0.requestStop(reason: why) }
        if first { listeners.withLock { $0 }.forEach { $0() } }
    }

    /// Runs `body` when a stop is first asked for (at once when it already was).
    func whenRequested(_ body: @escaping @Sendable () -> Void) {
        let already = listeners.withLock { l -> Bool in
            l.append(body)
            return requested != nil
        }
        if already { body() }
    }

    /// Call when `session` runs: passes on a stop asked for before.
    func started(_ session: CaptureSession) {
        if let why = reason.withLock({ $0?.why }) { session.requestStop(reason: why) }
    }

    /// A session added while the run goes on is stopped with the others from now on.
    func add(_ session: CaptureSession) {
        sessions.withLock { $0.append(session) }
    }

    /// A session removed while the run goes on (it has stopped): no longer held.
    func remove(_ session: CaptureSession) {
        sessions.withLock { $0.removeAll { $0 === session } }
    }

    /// The first stop asked for, and when (monotonic ns); nil while none was.
    var requested: (why: StopReason, atNs: UInt64)? { reason.withLock { $0 } }
}
