import CVHostAnalytics

/// Motion in one input's frames, from their luma alone, in a few hundred microseconds a frame:
/// Frigate's steps (frigate/motion/improved_motion.py) on a small picture, with five changes, each
/// said where it is made: the small picture averages 2x2 pixels at each sample (nearest-pixel
/// sampling aliases leaves and sensor noise into changes); the contrast is stretched by scaling
/// the threshold, not the picture (a stretch that changes as the scene does, a square appearing
/// on a plain wall, would else change every pixel against the background); the background starts
/// as the first frame (not black: no frames of calibration at start); it takes in each pixel by
/// its own count of frames changed (not the whole picture's: a walker leaves no trail); and a frame
/// that changed almost everywhere reports no motion (a flash is no object) while the background is
/// learnt anew.
///
/// For each frame: the luma scaled to `height` rows; a 3x3 blur; the difference from the
/// background, times the contrast's gain, over `threshold` (masked parts left out); dilated once;
/// its 8-connected regions of at least `minArea` pixels are the motion boxes (in the frame's
/// pixels). One instance an input, used from one thread at a time.
public final class MotionDetector {
    public struct Outcome: Equatable, Sendable {
        /// Where the frame moved, in its pixels; empty when nothing did.
        public var boxes: [Box]
        /// The share of the small picture that changed (0-1).
        public var changed: Double
        /// The background is being learnt anew (the start of a lightning flash, a change of exposure):
        /// no boxes are reported until less than 5% changes.
        public var calibrating: Bool
    }

    public let settings: MotionSettings
    private var masks: [BoxMask]

    /// The small picture's size, and the frame size it was made for (a new size starts anew).
    private var small = (width: 0, height: 0)
    private var frame = (width: 0, height: 0)
    private var background: [Float] = []
    private var picture: [UInt8] = []
    private var blurred: [UInt8] = []
    private var changedMask: [UInt8] = []
    private var dilated: [UInt8] = []
    /// Pixels of the small picture under a mask.
    private var masked: [Bool] = []
    private var hasMask = false
    /// The frame column of each small picture's column (bytes), for `columnStep`.
    private var columns: [Int] = []
    private var columnStep = 0
    private var regions = ConnectedRegions()
    /// The last 50 frames' 4th and 96th percentiles, averaged for the stretch (no jump a frame);
    /// all the first frame's at the start and after a flash (Frigate starts from 0 and 255).
    private var contrast: [(lo: UInt8, hi: UInt8)] = []
    private var contrastIndex = 0
    /// The small picture's histogram, counted anew each frame (kept: no allocation a frame).
    private var histogram = [Int](repeating: 0, count: 256)
    private var calibrating = false
    /// Frames in a row each pixel changed: after `changedFrames`, the background takes it in at
    /// `settle` a frame (a car that parks: about 3 s at 10 fps, its edge's difference under the threshold).
    static let changedFrames: UInt8 = 10
    static let settle: Float = 0.1
    private var changedFor: [UInt8] = []

    /// - Parameter masks: where motion is not looked for (`--mask`: a tree in the wind, a clock).
    public init(settings: MotionSettings = MotionSettings(), masks: [BoxMask] = []) {
        self.settings = settings
        self.masks = masks
    }

    /// The motion of one frame's luma plane: `width` x `height` samples, rows `stride` bytes apart,
    /// samples `step` bytes apart (1 for a grey or planar picture's luma, 2 for YUYV's).
    public func detect(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, step: Int = 1) -> Outcome {
        guard width >= 2, height >= 2 else { return Outcome(boxes: [], changed: 0, calibrating: false) }
        let first = frame != (width, height)
        if first { resize(width: width, height: height) }
        let (w, h) = small
        scale(luma, width: width, height: height, stride: stride, step: step)
        let gain = settings.contrast ? contrastGain() : 1
        blur()
        if first {
            // The first frame is the background: nothing moved yet.
            background = blurred.map { Float($0) }
            return Outcome(boxes: [], changed: 0, calibrating: false)
        }
        // |stretched - stretched background| > threshold, as |picture - background| > threshold / gain.
        let threshold = Float(settings.threshold) / gain
        blurred.withUnsafeBufferPointer { b in
            background.withUnsafeBufferPointer { bg in
                changedMask.withUnsafeMutableBufferPointer { c in
                    for i in c.indices { c[i] = abs(Float(b[i]) - bg[i]) > threshold ? 1 : 0 }
                }
            }
        }
        if hasMask {
            masked.withUnsafeBufferPointer { m in changedMask.withUnsafeMutableBufferPointer { c in for i in c.indices where m[i] { c[i] = 0 } } }
        }
        dilate()
        // Most frames of most cameras: nothing changed, and no region to look for.
        let anyChanged = changedMask.withUnsafeBufferPointer { $0.contains(1) }
        let found = anyChanged ? regions.find(dilated, width: w, height: h) : []
        let changedPixels = found.reduce(0) { $0 + $1.area }
        let changed = Double(changedPixels) / Double(w * h)
        let kept = found.filter { $0.area >= settings.minArea }
        if changed > settings.lightning {
            calibrating = true
            // A new light: the stretch starts from it too.
            contrast = []
        } else if calibrating && changed < 0.05 && kept.count <= 4 {
            calibrating = false
        }
        let sx = Double(width) / Double(w), sy = Double(height) / Double(h)
        let boxes = calibrating ? [] : kept.map { r in
            Box(x: Double(r.minX) * sx, y: Double(r.minY) * sy, width: Double(r.maxX - r.minX + 1) * sx, height: Double(r.maxY - r.minY + 1) * sy)
        }
        // The background follows: every pixel at once while calibrating; otherwise slowly, each
        // pixel that did not change; and one that changed for 10 frames in a row (a car that
        // parked) faster, at `settle`: at `alpha` a white car on grey asphalt stays motion for
        // 20-30 s (measured: 15 s at 10 fps, with the contrast's gain), all of it given to a
        // detector gated on motion. Frigate counts those frames for the whole picture, so a
        // walker's trail is taken in behind them as they go, and seen as motion once they are gone.
        let a = Float(calibrating ? 0.2 : settings.alpha), settled = max(a, Self.settle)
        let all = calibrating
        blurred.withUnsafeBufferPointer { b in
            changedMask.withUnsafeBufferPointer { c in
                changedFor.withUnsafeMutableBufferPointer { since in
                    background.withUnsafeMutableBufferPointer { bg in
                        for i in bg.indices {
                            since[i] = c[i] != 0 ? since[i] &+ (since[i] < 255 ? 1 : 0) : 0
                            if all || since[i] == 0 {
                                bg[i] += a * (Float(b[i]) - bg[i])
                            } else if since[i] >= Self.changedFrames {
                                bg[i] += settled * (Float(b[i]) - bg[i])
                            }
                        }
                    }
                }
            }
        }
        return Outcome(boxes: boxes, changed: changed, calibrating: calibrating)
    }

    /// Where motion is not looked for from the next frame on (a mask set or removed while the run
    /// goes on); the background is kept.
    public func replaceMasks(_ new: [BoxMask]) {
        masks = new
        if frame.width > 0 { placeMasks() }
    }

    /// Which pixels of the small picture are under a mask.
    private func placeMasks() {
        let (w, h) = small, (width, height) = frame
        masked = (0..<(w * h)).map { i in
            let p = Point((Double(i % w) + 0.5) * Double(width) / Double(w), (Double(i / w) + 0.5) * Double(height) / Double(h))
            return masks.contains { $0.contains(p, width: width, height: height) }
        }
        hasMask = masked.contains(true)
    }

    /// A new frame size: the small picture's, its buffers and its mask.
    private func resize(width: Int, height: Int) {
        frame = (width, height)
        let h = min(settings.height, height)
        let w = max(2, (width * h + height / 2) / height)
        small = (w, h)
        columns = []
        picture = [UInt8](repeating: 0, count: w * h)
        blurred = picture
        changedMask = picture
        dilated = picture
        background = [Float](repeating: 0, count: w * h)
        placeMasks()
        changedFor = picture
        calibrating = false
        contrast = []
    }

    /// The small picture: at each of its pixels, the average of the 2x2 frame pixels there.
    private func scale(_ luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, step: Int) {
        let (w, h) = small
        if columns.count != w || columnStep != step {
            // Each small column's first frame sample, in bytes: worked out once, not divided a pixel.
            columns = (0..<w).map { x in min(x * width / w, width - 2) * step }
            columnStep = step
        }
        columns.withUnsafeBufferPointer { cols in
            picture.withUnsafeMutableBufferPointer { out in
                for y in 0..<h {
                    let fy = min(y * height / h, height - 2)
                    let row0 = luma + fy * stride, row1 = row0 + stride
                    let o = y * w
                    for x in 0..<w {
                        let fx = cols[x]
                        let sum = Int(row0[fx]) + Int(row0[fx + step]) + Int(row1[fx]) + Int(row1[fx + step])
                        out[o + x] = UInt8(truncatingIfNeeded: sum >> 2)
                    }
                }
            }
        }
    }

    /// How much the small picture's contrast would be stretched to fill 0-255 from the running
    /// averages of its 4th and 96th percentiles (at most `maxGain`: a plain wall's noise is not
    /// made into change); 1 until a picture with any contrast came.
    private func contrastGain() -> Float {
        histogram.withUnsafeMutableBufferPointer { hist in
            hist.update(repeating: 0)
            picture.withUnsafeBufferPointer { for v in $0 { hist[Int(v)] += 1 } }
        }
        let n = picture.count
        func percentile(_ share: Double) -> UInt8 {
            let wanted = Int(Double(n) * share)
            var seen = 0
            for (v, count) in histogram.enumerated() {
                seen += count
                if seen > wanted { return UInt8(v) }
            }
            return 255
        }
        let lo = percentile(0.04), hi = percentile(0.96)
        // A picture of one colour has no contrast to measure: it is left out of the average.
        if lo < hi {
            if contrast.isEmpty {
                contrast = Array(repeating: (lo, hi), count: 50)
            } else {
                contrast[contrastIndex] = (lo, hi)
                contrastIndex = (contrastIndex + 1) % contrast.count
            }
        }
        guard !contrast.isEmpty else { return 1 }
        let spread = contrast.reduce(0.0) { $0 + Double($1.hi) - Double($1.lo) } / Double(contrast.count)
        return Float(min(Self.maxGain, max(1, 255 / max(1, spread))))
    }

    /// The most the contrast is stretched: a picture whose percentiles are 24 apart.
    static let maxGain = 255.0 / 24

    /// A 3x3 binomial blur (1 2 1 each way), the edges repeated.
    private func blur() {
        let (w, h) = small
        picture.withUnsafeBufferPointer { p in
            blurred.withUnsafeMutableBufferPointer { out in
                for y in 0..<h {
                    let up = max(0, y - 1) * w, row = y * w, down = min(h - 1, y + 1) * w
                    for x in 0..<w {
                        let l = max(0, x - 1), r = min(w - 1, x + 1)
                        var sum = Int(p[up + l]) + 2 * Int(p[up + x]) + Int(p[up + r])
                        sum += 2 * Int(p[row + l]) + 4 * Int(p[row + x]) + 2 * Int(p[row + r])
                        sum += Int(p[down + l]) + 2 * Int(p[down + x]) + Int(p[down + r])
                        out[row + x] = UInt8(truncatingIfNeeded: sum >> 4)
                    }
                }
            }
        }
    }

    /// The changed pixels grown by one in every direction (holes in a moving body filled): a 3x3
    /// maximum, as rows then columns.
    private func dilate() {
        let (w, h) = small
        changedMask.withUnsafeBufferPointer { c in
            dilated.withUnsafeMutableBufferPointer { out in
                // Rows: each pixel the largest of itself and its left and right neighbours (in `out`).
                for y in 0..<h {
                    let row = y * w
                    for x in 0..<w {
                        out[row + x] = max(c[row + x], x > 0 ? c[row + x - 1] : 0, x + 1 < w ? c[row + x + 1] : 0)
                    }
                }
                // Columns: in place, keeping the row above as it was.
                var above = [UInt8](repeating: 0, count: w)
                above.withUnsafeMutableBufferPointer { a in
                    for y in 0..<h {
                        let row = y * w
                        for x in 0..<w {
                            let here = out[row + x]
                            out[row + x] = max(here, a[x], y + 1 < h ? out[row + w + x] : 0)
                            a[x] = here
                        }
                    }
                }
            }
        }
    }
}
