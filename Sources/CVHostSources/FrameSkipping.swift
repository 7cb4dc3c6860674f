import CVHostCore

/// Whether a decoder may skip the frames no other frame depends on (FFmpeg's skip_frame =
/// AVDISCARD_NONREF: an H.264 or HEVC stream's non-reference B-frames), decoding less when the
/// session's consumers take few of the stream's frames: detection at 5 a second on a 30 fps
/// camera. Most cameras send no such frames (I and P only), and then nothing changes.
///
/// Skipping is on while every consumer takes at most half the stream's rate, and it stays on only
/// while the frames left come at least twice as often as the fastest consumer takes them: then
/// each consumer's frame-rate cap (which passes the first frame due) still finds a frame within half
/// its interval. A stream whose frames left come farther apart (three B-frames without a pyramid:
/// one frame in four left) is decoded whole from then on, and that is said once.
struct FrameSkipping {
    /// The stream's own frame rate (0: it does not say: never skipped).
    let streamFrameRate: Double
    /// The most frames a second any consumer takes now (0: every frame).
    private(set) var neededFrameRate: Double = 0
    /// Given up for this stream: the frames left came too far apart.
    private(set) var refused = false
    private var lastKeptNs: Int64?

    init(streamFrameRate: Double) {
        self.streamFrameRate = streamFrameRate
    }

    /// Whether non-reference frames are skipped now.
    var skips: Bool {
        !refused && neededFrameRate > 0 && streamFrameRate > 0 && neededFrameRate * 2 <= streamFrameRate
    }

    /// The consumers now take at most `fps` frames a second (0: every frame).
    mutating func need(_ fps: Double) {
        neededFrameRate = max(0, fps)
        lastKeptNs = nil
    }

    /// A frame decoded while skipping, at `ptsNs`: false when it came too long after the one
    /// before (skipping is then refused for good).
    mutating func kept(ptsNs: Int64) -> Bool {
        guard skips else {
            lastKeptNs = nil
            return true
        }
        defer { lastKeptNs = ptsNs }
        guard let last = lastKeptNs, ptsNs > last else { return true }
        if Double(ptsNs - last) > 1e9 / neededFrameRate / 2 {
            refused = true
            return false
        }
        return true
    }
}
