/// The link between the session's video and one output (AVCaptureConnection): it can be
/// disabled, it can cap the frame rate its output sees, and it can mirror and rotate the picture.
public final class CaptureConnection: Sendable {
    private struct State {
        var enabled = true
        var orientation = VideoOrientation.identity
        var minFrameDurationNs: Int64 = 0
        var lastPassedNs: Int64?
    }

    private let state = Locked(State())

    public init() {}

    /// When false, no frames flow to the output (they are not offered, so not counted as drops).
    public var isEnabled: Bool {
        get { state.withLock { $0.enabled } }
        set { state.withLock { $0.enabled = newValue } }
    }

    /// Flip the picture left to right (AVCaptureConnection.isVideoMirrored), before any rotation.
    public var isVideoMirrored: Bool {
        get { state.withLock { $0.orientation.isMirrored } }
        set { state.withLock { $0.orientation.isMirrored = newValue } }
    }

    /// Turn the picture clockwise by 0, 90, 180 or 270 degrees (AVCaptureConnection.videoRotationAngle),
    /// e.g. for a camera mounted upside down. Other angles are a programming error.
    public var videoRotationAngle: Int {
        get { state.withLock { $0.orientation.rotationAngle } }
        set { state.withLock { $0.orientation = VideoOrientation(isMirrored: $0.orientation.isMirrored, rotationAngle: newValue) } }
    }

    /// Mirror and rotation together.
    public var videoOrientation: VideoOrientation { state.withLock { $0.orientation } }

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
