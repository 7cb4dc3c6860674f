import Synchronization

/// The link between the session's video and one output (AVCaptureConnection): it can be
/// disabled, and it can cap the frame rate its output sees.
public final class CaptureConnection: Sendable {
    private struct State {
        var enabled = true
        var minFrameDurationNs: Int64 = 0
        var lastPassedNs: Int64?
    }

    private let state = Mutex(State())

    public init() {}

    /// When false, no frames flow to the output (they are not offered, so not counted as drops).
    public var isEnabled: Bool {
        get { state.withLock { $0.enabled } }
        set { state.withLock { $0.enabled = newValue } }
    }

    /// The shortest time between frames this connection lets through, in seconds; 0 = no cap
    /// (AVCaptureConnection.videoMinFrameDuration). Measured on the source's presentation times,
    /// so a file is capped the same however fast it is decoded.
    public var videoMinFrameDuration: Double {
        get { state.withLock { Double($0.minFrameDurationNs) / 1e9 } }
        set { state.withLock { $0.minFrameDurationNs = Int64((max(0, newValue) * 1e9).rounded()) } }
    }

    /// Decides whether a frame with this presentation time passes the cap, and if so records it.
    func admit(presentationTimeNs: Int64) -> Bool {
        state.withLock { s in
            guard s.minFrameDurationNs > 0 else { return true }
            // 1 ms of slack so that a 30 fps source capped at 30 fps is not thinned by jitter.
            if let last = s.lastPassedNs, presentationTimeNs - last < s.minFrameDurationNs - 1_000_000 {
                return false
            }
            s.lastPassedNs = presentationTimeNs
            return true
        }
    }
}
