import CVHostAnalytics
import CVHostCore

/// One input's motion, as the host sees it (`--motion`): its session's analyzer, which runs the
/// MotionDetector on each frame's luma on the capture thread, before any output is offered the
/// frame (a plugin gated on motion decides on the frame's own motion: `FrameMotion`), and says when
/// motion starts (with its boxes) and when it has ended: no motion for `hold` seconds of the
/// input's media time.
public final class MotionWatch: SampleAnalyzer, @unchecked Sendable {
    // @unchecked Sendable: the detector and the state are used on the session's capture thread only.

    /// What the watch says.
    public enum Change: Sendable {
        /// Motion began on frame `sequence`, where `boxes` are (its pixels), `changed` of the picture.
        case started(sequence: UInt64, ptsNs: Int64, captureNs: Int64, boxes: [Box], changed: Double)
        /// Motion has ended: none for `hold` seconds up to frame `sequence` (or the input ended); it lasted `seconds`.
        case ended(sequence: UInt64, ptsNs: Int64, captureNs: Int64, seconds: Double)
    }

    private let detector: MotionDetector
    /// Masks set or removed while the run goes on, for the capture thread to take up at its next frame.
    private let newMasks = Locked<[BoxMask]?>(nil)
    private let holdNs: Int64
    private let said: @Sendable (Change) -> Void
    /// Since when (media time) motion runs, and when it was last seen; nil: none.
    private var moving: (sinceNs: Int64, lastNs: Int64, lastSequence: UInt64, lastCaptureNs: Int64)?

    /// - Parameter said: each change, on the capture thread (it must not wait long).
    public init(settings: MotionSettings, masks: [BoxMask], said: @escaping @Sendable (Change) -> Void) {
        detector = MotionDetector(settings: settings, masks: masks)
        holdNs = Int64(settings.hold * 1e9)
        self.said = said
    }

    /// Where motion is not looked for from the next frame on (`PUT /masks/NAME`, a reload). Any thread.
    public func replaceMasks(_ masks: [BoxMask]) {
        newMasks.withLock { $0 = masks }
    }

    public func analyze(_ sample: SampleBuffer) -> FrameMotion {
        if let masks = newMasks.withLock({ m in defer { m = nil }; return m }) { detector.replaceMasks(masks) }
        // The luma is read as it is from these; anything else (RGB) is made grey first.
        let frame = sample.pixelBuffer
        let pixels = [.gray8, .i420, .nv12, .yuyv].contains(frame.format) ? frame : frame.converted(to: .gray8)
        let luma = pixels.planes[0]
        let outcome = detector.detect(luma: luma.base.assumingMemoryBound(to: UInt8.self), width: pixels.width, height: pixels.height,
                                      stride: luma.bytesPerRow, step: pixels.format == .yuyv ? 2 : 1)
        let pts = sample.presentationTimeNs
        if !outcome.boxes.isEmpty {
            if moving == nil {
                said(.started(sequence: sample.sequence, ptsNs: pts, captureNs: sample.captureTimeNs, boxes: outcome.boxes, changed: outcome.changed))
                moving = (pts, pts, sample.sequence, sample.captureTimeNs)
            } else {
                moving!.lastNs = pts
                moving!.lastSequence = sample.sequence
                moving!.lastCaptureNs = sample.captureTimeNs
            }
        } else if let m = moving, pts - m.lastNs >= holdNs {
            moving = nil
            said(.ended(sequence: sample.sequence, ptsNs: pts, captureNs: sample.captureTimeNs, seconds: Double(m.lastNs - m.sinceNs) / 1e9))
        }
        return FrameMotion(active: moving != nil, regions: outcome.boxes.map { b in
            FrameMotion.Region(x: Int(b.x.rounded(.down)), y: Int(b.y.rounded(.down)), width: Int(b.width.rounded(.up)), height: Int(b.height.rounded(.up)))
        })
    }

    /// The input ended: motion that runs ends with it.
    public func sessionEnded() {
        guard let m = moving else { return }
        moving = nil
        said(.ended(sequence: m.lastSequence, ptsNs: m.lastNs, captureNs: m.lastCaptureNs, seconds: Double(m.lastNs - m.sinceNs) / 1e9))
    }
}
