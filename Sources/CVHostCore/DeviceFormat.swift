/// A range of frame rates a device supports for one format (AVFrameRateRange).
public struct FrameRateRange: Sendable, Equatable, CustomStringConvertible {
    public let minFrameRate: Double
    public let maxFrameRate: Double

    public init(minFrameRate: Double, maxFrameRate: Double) {
        self.minFrameRate = minFrameRate
        self.maxFrameRate = maxFrameRate
    }

    public var description: String {
        minFrameRate == maxFrameRate ? "\(FrameRateRange.format(maxFrameRate)) fps" : "\(FrameRateRange.format(minFrameRate))-\(FrameRateRange.format(maxFrameRate)) fps"
    }

    /// A frame rate for people: whole rates as they are, others with two decimals (59.94).
    public static func format(_ rate: Double) -> String {
        rate == rate.rounded() ? String(Int(rate)) : String(format2: rate)
    }
}

extension String {
    /// A number with two decimals, without Foundation.
    init(format2 v: Double) {
        let scaled = Int((v * 100).rounded())
        let frac = abs(scaled % 100)
        self = "\(scaled / 100).\(frac < 10 ? "0" : "")\(frac)"
    }
}

/// One way a device can deliver frames: pixel format, size and the frame rates for them
/// (AVCaptureDevice.Format).
public struct DeviceFormat: Sendable, Equatable, CustomStringConvertible {
    /// The format as the device delivers it, e.g. "YUYV" or "MJPG" (a four-character code).
    public let deviceFourCC: String
    /// What cvhost hands to outputs after the device's own decoding (nil when it cannot).
    public let pixelFormat: PixelFormat?
    public let width: Int
    public let height: Int
    public let frameRateRanges: [FrameRateRange]

    public init(deviceFourCC: String, pixelFormat: PixelFormat?, width: Int, height: Int,
                frameRateRanges: [FrameRateRange]) {
        self.deviceFourCC = deviceFourCC
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.frameRateRanges = frameRateRanges
    }

    public var maxFrameRate: Double { frameRateRanges.map(\.maxFrameRate).max() ?? 0 }

    /// Frames are JPEGs (a webcam's MJPEG): cvhost decodes them.
    public var isJPEG: Bool { deviceFourCC == "MJPG" || deviceFourCC == "JPEG" }

    public var description: String {
        "\(deviceFourCC) \(width)x\(height) " + frameRateRanges.map(\.description).joined(separator: ", ")
    }
}
