import CVHostCore

/// What a user asks of a camera's format (`--format`), and how a format is chosen for it
/// (AVCaptureSession.Preset and activeFormat in one).
public struct FormatRequest: Sendable, Equatable {
    public enum Size: Sendable, Equatable {
        /// The largest size (AVCaptureSession.Preset.high).
        case high
        /// The size closest to 1280x720 (.medium).
        case medium
        /// The size closest to 640x480 (.low).
        case low
        /// Exactly this size, or the nearest larger one the camera offers.
        case exact(width: Int, height: Int)
        /// Leave the camera's current format alone (.inputPriority).
        case inputPriority
    }

    public var size: Size
    /// Frames per second; nil for the highest the chosen size allows.
    public var frameRate: Double?
    /// A device four-character code (`YUYV`, `MJPG`) or a cvhost pixel format (`nv12`); nil for the best.
    public var pixelFormat: String?

    public init(size: Size = .medium, frameRate: Double? = nil, pixelFormat: String? = nil) {
        self.size = size
        self.frameRate = frameRate
        self.pixelFormat = pixelFormat
    }

    /// Parses `high|medium|low|input-priority|WxH`, each optionally followed by `@FPS` (or `@FPS` alone).
    public init(parsing text: String, pixelFormat: String? = nil) throws {
        let bad = CaptureError(.unsupported, "cannot read --format \(text): write WxH[@FPS] (1280x720@30), high, medium, low or input-priority")
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        switch parts[0].lowercased() {
        case "high": size = .high
        case "medium", "": size = .medium
        case "low": size = .low
        case "input-priority": size = .inputPriority
        default:
            let wh = parts[0].lowercased().split(separator: "x")
            guard wh.count == 2, let w = Int(wh[0]), let h = Int(wh[1]), w > 0, h > 0 else { throw bad }
            size = .exact(width: w, height: h)
        }
        if parts.count == 2 {
            guard let fps = Double(parts[1]), fps > 0 else { throw bad }
            frameRate = fps
        }
        self.pixelFormat = pixelFormat
    }

    /// Ranks how directly cvhost reads a device format: luma-first formats go to every plugin
    /// without conversion; YUYV needs one for grey; MJPEG is decoded (cheap next to detection:
    /// benchmarks/mjpeg_decode.py); RGB needs luma computed; others are converted by libv4lconvert.
    static func directness(_ f: DeviceFormat) -> Int {
        if f.isJPEG { return 2 }
        return switch f.pixelFormat {
        case .nv12?, .i420?, .gray8?: 4
        case .yuyv?: 3
        case .rgb24?, .bgr24?: 1
        case nil: 0
        }
    }

    /// Picks one of `formats` and the frame rate for it.
    /// - Throws: `.unsupported` naming what the camera offers when nothing fits.
    public func choose(from formats: [DeviceFormat]) throws -> (DeviceFormat, Double) {
        var candidates = formats
        if let wanted = pixelFormat {
            let code = wanted.uppercased()
            let named = PixelFormat(name: wanted)
            candidates = formats.filter { $0.deviceFourCC.uppercased() == code || ($0.pixelFormat != nil && $0.pixelFormat == named) }
            guard !candidates.isEmpty else {
                let offered = Set(formats.map(\.deviceFourCC)).sorted().joined(separator: ", ")
                throw CaptureError(.unsupported, "the camera has no pixel format \(wanted): it offers \(offered)")
            }
        }
        guard !candidates.isEmpty else { throw CaptureError(.unsupported, "the camera lists no formats") }
        func area(_ f: DeviceFormat) -> Int { f.width * f.height }
        let sized: [DeviceFormat]
        switch size {
        case .inputPriority:
            throw CaptureError(.invalidState, "input-priority keeps the current format; nothing to choose")
        case .high:
            let best = candidates.map(area).max()!
            sized = candidates.filter { area($0) == best }
        case .medium, .low:
            let target = size == .medium ? 1280 * 720 : 640 * 480
            let best = candidates.map { abs(area($0) - target) }.min()!
            sized = candidates.filter { abs(area($0) - target) == best }
        case .exact(let w, let h):
            let exact = candidates.filter { $0.width == w && $0.height == h }
            if !exact.isEmpty {
                sized = exact
            } else {
                let larger = candidates.filter { $0.width >= w && $0.height >= h }
                guard let smallest = larger.map(area).min() else {
                    let sizes = Set(candidates.map { "\($0.width)x\($0.height)" }).sorted().joined(separator: ", ")
                    throw CaptureError(.unsupported, "the camera offers no \(w)x\(h) or larger: it has \(sizes)")
                }
                sized = larger.filter { area($0) == smallest }
            }
        }
        // Among formats of that size: those that reach the frame rate asked for (without one: the
        // fastest, as a webcam's 1080p is 30 fps in MJPEG and 5 in YUYV), then the most direct.
        let rate = frameRate ?? sized.map(\.maxFrameRate).max()!
        let reaching = sized.filter { f in f.frameRateRanges.contains { $0.maxFrameRate >= rate - 0.01 } }
        let pool = reaching.isEmpty ? sized : reaching
        let chosen = pool.max { a, b in
            (FormatRequest.directness(a), a.maxFrameRate) < (FormatRequest.directness(b), b.maxFrameRate)
        }!
        let fps: Double
        if let rate = frameRate {
            // The offered rate nearest to the one asked for.
            let offered = chosen.frameRateRanges.flatMap { r in
                r.minFrameRate == r.maxFrameRate ? [r.maxFrameRate] : [min(max(rate, r.minFrameRate), r.maxFrameRate)]
            }
            fps = offered.min { abs($0 - rate) < abs($1 - rate) } ?? rate
        } else {
            fps = chosen.maxFrameRate
        }
        return (chosen, fps)
    }
}
