import CVHostCore

/// Stops every input of a run at once (a signal, --duration, stdout closed). A stop asked for
/// while an input is still starting reaches it as soon as it runs (`started`).
final class RunStop: Sendable {
    private let sessions: [CaptureSession]
    private let reason = Locked<(why: StopReason, atNs: UInt64)?>(nil)

    init(sessions: [CaptureSession]) { self.sessions = sessions }

    func request(_ why: StopReason) {
        reason.withLock { if $0 == nil { $0 = (why, HostClock.monotonicNs()) } }
        sessions.forEach { $0.requestStop(reason: why) }
    }

    /// Call when `session` runs: passes on a stop asked for before.
    func started(_ session: CaptureSession) {
        if let why = reason.withLock({ $0?.why }) { session.requestStop(reason: why) }
    }

    /// The first stop asked for, and when (monotonic ns); nil while none was.
    var requested: (why: StopReason, atNs: UInt64)? { reason.withLock { $0 } }
}
