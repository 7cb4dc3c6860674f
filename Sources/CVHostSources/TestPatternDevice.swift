import CVHostCore
import Synchronization

/// A synthetic camera: colour bars, a grey ramp and a moving white square, in I420.
///
/// Deterministic: frame n is always the same image. The top-left 16x16 block carries
/// `n % 256` as its luma value, so a consumer can tell which frame it got. Live-paced by
/// default (frames arrive on their own clock at the chosen rate, like a camera); `unpaced`
/// makes it deliver as fast as consumers take frames, for benchmarks.
public final class TestPatternDevice: CaptureDevice {
    public let width: Int
    public let height: Int
    public let frameRate: Double
    public let paced: Bool

    public var uniqueID: String { "testsrc:\(width)x\(height)@\(formatNumber(frameRate))\(paced ? "" : ":unpaced")" }
    public var localizedName: String { "test pattern \(width)x\(height) at \(formatNumber(frameRate)) fps" }
    public var modelID: String { "cvhost-testsrc" }
    public var kind: CaptureDeviceKind { .testPattern }
    public var isConnected: Bool { true }
    public var isLive: Bool { paced }
    public let configurationLock = ConfigurationLock()

    public var formats: [DeviceFormat] {
        [DeviceFormat(deviceFourCC: PixelFormat.i420.fourCCString, pixelFormat: .i420, width: width, height: height,
                      frameRateRanges: [FrameRateRange(minFrameRate: frameRate, maxFrameRate: frameRate)])]
    }

    public var activeFormat: DeviceFormat? { formats.first }

    /// - Parameters:
    ///   - width, height: even, 16...7680 x 16...4320.
    ///   - frameRate: frames per second, 0 < rate <= 1000.
    ///   - paced: deliver on the clock (a live source) or as fast as taken.
    public init(width: Int = 640, height: Int = 480, frameRate: Double = 30, paced: Bool = true) throws {
        guard (16...7680).contains(width), (16...4320).contains(height), width % 2 == 0, height % 2 == 0 else {
            throw CaptureError(.unsupportedInput,
                               "testsrc size \(width)x\(height) is not supported: use even sizes from 16x16 to 7680x4320")
        }
        guard frameRate > 0, frameRate <= 1000 else {
            throw CaptureError(.unsupportedInput, "testsrc frame rate \(frameRate) is not supported: use 0 < FPS <= 1000")
        }
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.paced = paced
    }

    public func setActiveFormat(_ format: DeviceFormat) throws {
        try configurationLock.require(for: "the active format", deviceName: localizedName)
        guard format == activeFormat else {
            throw CaptureError(.unsupported, "the test pattern offers only \(formats[0])")
        }
    }

    public func applyCaptureHints(_ hints: CaptureHints) throws -> [SettingReport] {
        try configurationLock.require(for: "capture hints", deviceName: localizedName)
        return reportHintsUnsupported(hints, reason: "the test pattern has no focus control")
    }

    public func openStream() throws -> FrameStream {
        TestPatternStream(width: width, height: height, frameRate: frameRate, paced: paced)
    }
}

func formatNumber(_ v: Double) -> String {
    v == v.rounded() ? String(Int(v)) : String(v)
}

/// Produces the frames of a running test pattern.
final class TestPatternStream: FrameStream, @unchecked Sendable {
    // @unchecked Sendable: `next()` is called from the capture thread only; `cancelled` is atomic.
    private let width: Int, height: Int
    private let frameRate: Double
    private let paced: Bool
    private let background: PixelBuffer
    private var index: UInt64 = 0
    private var startNs: UInt64 = 0
    private let cancelled = Atomic(false)
    private let box: Int

    init(width: Int, height: Int, frameRate: Double, paced: Bool) {
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.paced = paced
        self.box = max(8, min(width, height) / 8) & ~1
        self.background = TestPatternStream.makeBackground(width: width, height: height)
    }

    /// Frame `index`'s time, rounded once (frame 3 at 30 fps is 0.100000 s, not 3 x 0.033333333).
    private func timestampNs(_ index: UInt64) -> Int64 {
        Int64((Double(index) * 1e9 / frameRate).rounded())
    }

    func next() throws -> CapturedFrame? {
        if cancelled.load(ordering: .relaxed) { return nil }
        if index == 0 { startNs = HostClock.monotonicNs() }
        if paced {
            let due = startNs + UInt64(timestampNs(index))
            // Sleep in slices so that cancel() is noticed within 50 ms even at 1 fps.
            while HostClock.monotonicNs() < due {
                if cancelled.load(ordering: .relaxed) { return nil }
                HostClock.sleep(untilMonotonicNs: min(due, HostClock.monotonicNs() + 50_000_000))
            }
        }
        let frame = render(index)
        let pts = timestampNs(index)
        index += 1
        return CapturedFrame(pixelBuffer: frame, presentationTimeNs: pts)
    }

    func cancel() { cancelled.store(true, ordering: .relaxed) }

    func close() {}

    private func render(_ n: UInt64) -> PixelBuffer {
        let (w, h, box) = (width, height, self.box)
        let bg = background
        return PixelBuffer.allocate(format: .i420, width: w, height: h, colorimetry: .jpeg) { planes, strides in
            for p in 0..<3 {
                let src = bg.planes[p]
                for row in 0..<src.rows {
                    (planes[p] + row * strides[p]).copyMemory(from: src.base + row * src.bytesPerRow, byteCount: src.samplesPerRow)
                }
            }
            let y = planes[0].assumingMemoryBound(to: UInt8.self)
            // The moving square: across and down, bouncing, one step per frame.
            let span = max(1, w - box), vspan = max(1, h - box)
            let t = Int(n % UInt64(2 * span)), u = Int((n / 2) % UInt64(2 * vspan))
            let bx = t < span ? t : 2 * span - t, by = u < vspan ? u : 2 * vspan - u
            for row in by..<(by + box) { (y + row * strides[0] + bx).update(repeating: 255, count: box) }
            // The frame counter block.
            for row in 0..<16 { (y + row * strides[0]).update(repeating: UInt8(truncatingIfNeeded: n), count: 16) }
        }
    }

    /// Seven colour bars over the top two thirds, a horizontal grey ramp below.
    private static func makeBackground(width w: Int, height h: Int) -> PixelBuffer {
        // (Y, U, V) of white, yellow, cyan, green, magenta, red, blue at 75%, full-range BT.601.
        let bars: [(UInt8, UInt8, UInt8)] = [
            (191, 128, 128), (170, 32, 138), (134, 144, 32), (113, 48, 42), (78, 208, 214), (57, 112, 224), (21, 224, 118),
        ]
        return PixelBuffer.allocate(format: .i420, width: w, height: h, colorimetry: .jpeg) { planes, strides in
            let split = h * 2 / 3
            for plane in 0..<3 {
                let sub = plane == 0 ? 1 : 2
                let pw = (w + sub - 1) / sub, ph = (h + sub - 1) / sub
                let base = planes[plane].assumingMemoryBound(to: UInt8.self)
                for row in 0..<ph {
                    let o = base + row * strides[plane]
                    for x in 0..<pw {
                        if row * sub < split {
                            let bar = bars[min(6, x * sub * 7 / w)]
                            o[x] = plane == 0 ? bar.0 : (plane == 1 ? bar.1 : bar.2)
                        } else {
                            o[x] = plane == 0 ? UInt8(x * 255 / max(1, pw - 1)) : 128
                        }
                    }
                }
            }
        }
    }
}
