import CVHostAnalytics
import CVHostCore

/// One input's motion, as the host sees it (`--motion`): an output of the input's session, like a
/// plugin's, that never holds a live input back (drop-late; a file's frames are each looked at,
/// as its plugins' are: block), runs the MotionDetector on each
/// frame's luma and says when motion starts (with its boxes) and when it has ended: no motion
/// for `hold` seconds of the input's media time.
public final class MotionWatch: VideoDataOutputDelegate, @unchecked Sendable {
    // @unchecked Sendable: the detector and the state are used on the output's one worker thread only.

    /// What the watch says.
    public enum Change: Sendable {
        /// Motion began on frame `sequence`, where `boxes` are (its pixels), `changed` of the picture.
        case started(sequence: UInt64, ptsNs: Int64, captureNs: Int64, boxes: [Box], changed: Double)
        /// Motion has ended: none for `hold` seconds up to frame `sequence` (or the input ended); it lasted `seconds`.
        case ended(sequence: UInt64, ptsNs: Int64, captureNs: Int64, seconds: Double)
    }

    public let output: VideoDataOutput
    private let detector: MotionDetector
    private let holdNs: Int64
    private let said: @Sendable (Change) -> Void
    /// Since when (media time) motion runs, and when it was last seen; nil: none.
    private var moving: (sinceNs: Int64, lastNs: Int64, lastSequence: UInt64, lastCaptureNs: Int64)?

    /// - Parameters:
    ///   - live: a camera or a stream (drop-late), not a file (block).
    ///   - said: each change, on the output's thread.
    public init(source: String, settings: MotionSettings, masks: [BoxMask], live: Bool, said: @escaping @Sendable (Change) -> Void) {
        detector = MotionDetector(settings: settings, masks: masks)
        holdNs = Int64(settings.hold * 1e9)
        self.said = said
        output = VideoDataOutput(label: "motion of \(source)")
        // The luma is read as it is from these; anything else (RGB) is made grey first.
        output.acceptedPixelFormats = [.gray8, .i420, .nv12, .yuyv]
        output.backpressure = live ? .dropLate : .block
        output.maxQueuedFrames = live ? 1 : 2
        output.setSampleBufferDelegate(self)
    }

    public func videoDataOutput(_ output: VideoDataOutput, didOutput sample: SampleBuffer, pixelBuffer: PixelBuffer, context: DeliveryContext) {
        let pixels = [.gray8, .i420, .nv12, .yuyv].contains(pixelBuffer.format) ? pixelBuffer : pixelBuffer.converted(to: .gray8)
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
    }

    public func videoDataOutput(_ output: VideoDataOutput, didDrop sample: SampleBuffer, reason: DropReason) {}

    /// The input ended: motion that runs ends with it.
    public func videoDataOutputDidFinish(_ output: VideoDataOutput, worker: Int) {
        guard let m = moving else { return }
        moving = nil
        said(.ended(sequence: m.lastSequence, ptsNs: m.lastNs, captureNs: m.lastCaptureNs, seconds: Double(m.lastNs - m.sinceNs) / 1e9))
    }
}
