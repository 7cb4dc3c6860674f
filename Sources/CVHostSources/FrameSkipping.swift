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
///
/// Fewer still: only keyframes (AVDISCARD_NONKEY) when they come at least twice as often as the
/// fastest consumer takes frames (a camera's keyframe a second, plugins at 0.5 a second; measured
/// from the packets), and no consumer looks at every frame (`keyframesWillDo`: not with the host's
/// motion, which compares each frame with the one before). Keyframes that then come farther apart
/// (a camera that stretches its keyframe interval when nothing moves) end it for the stream.
struct FrameSkipping {
    /// The stream's own frame rate (0: it does not say: never skipped).
    let streamFrameRate: Double
    /// The most frames a second any consumer takes now (0: every frame).
    private(set) var neededFrameRate: Double = 0
    /// Given up for this stream: the frames left came too far apart.
    private(set) var refused = false
    private var lastKeptNs: Int64?
    /// Whether keyframes alone would do for the consumers (none looks at every frame).
    private(set) var keyframesWillDo = false
    /// Seconds between the last two keyframes read (nil: fewer than two yet).
    private(set) var keyframeInterval: Double?
    private var lastKeyframeNs: Int64?
    /// Keyframes alone were given up for this stream: they came too far apart.
    private(set) var keyframesRefused = false

    init(streamFrameRate: Double) {
        self.streamFrameRate = streamFrameRate
    }

    /// Whether non-reference frames are skipped now.
    var skips: Bool {
        !refused && neededFrameRate > 0 && streamFrameRate > 0 && neededFrameRate * 2 <= streamFrameRate
    }

    /// Whether only keyframes are decoded now.
    var keyframesOnly: Bool {
        guard !keyframesRefused, keyframesWillDo, neededFrameRate > 0, let keyframeInterval else { return false }
        return keyframeInterval * neededFrameRate * 2 <= 1
    }

    /// The consumers now take at most `fps` frames a second (0: every frame); `keyframesWillDo`:
    /// none of them looks at every frame.
    mutating func need(_ fps: Double, keyframesWillDo: Bool = false) {
        neededFrameRate = max(0, fps)
        self.keyframesWillDo = keyframesWillDo
        lastKeptNs = nil
    }

    /// A packet of the stream read at `ptsNs`: its keyframes' interval measured.
    mutating func read(keyframe: Bool, ptsNs: Int64) {
        guard keyframe else { return }
        if let last = lastKeyframeNs, ptsNs > last { keyframeInterval = Double(ptsNs - last) / 1e9 }
        lastKeyframeNs = ptsNs
    }

    /// A frame decoded while skipping, at `ptsNs`: false when it came too long after the one
    /// before (the skipping in force, keyframes alone or frames none depends on, is then refused
    /// for good).
    mutating func kept(ptsNs: Int64) -> Bool {
        let keyframes = keyframesOnly
        guard skips || keyframes else {
            lastKeptNs = nil
            return true
        }
        defer { lastKeptNs = ptsNs }
        guard let last = lastKeptNs, ptsNs > last else { return true }
        if Double(ptsNs - last) > 1e9 / neededFrameRate / 2 {
            if keyframes { keyframesRefused = true } else { refused = true }
            lastKeptNs = nil
            return false
        }
        return true
    }
}
