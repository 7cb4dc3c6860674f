/// A pixel format, identified by its V4L2 four-character code (the same values as
/// `cvhost_pixel_format` in the plugin ABI header).
public enum PixelFormat: UInt32, CaseIterable, Sendable, CustomStringConvertible {
    /// 8-bit luma, one plane.
    case gray8 = 0x5945_5247  // 'GREY'
    /// Planar YUV 4:2:0: Y, U, V planes; chroma halved both ways.
    case i420 = 0x3231_5559  // 'YU12'
    /// Semi-planar YUV 4:2:0: Y plane, interleaved UV plane.
    case nv12 = 0x3231_564E  // 'NV12'
    /// Packed YUV 4:2:2: Y0 U Y1 V.
    case yuyv = 0x5659_5559  // 'YUYV'
    /// Packed R G B, 3 bytes a pixel.
    case rgb24 = 0x3342_4752  // 'RGB3'
    /// Packed B G R, 3 bytes a pixel (OpenCV's order).
    case bgr24 = 0x3352_4742  // 'BGR3'

    /// The name users type and see (`gray8`, `i420`, ...).
    public var name: String {
        switch self {
        case .gray8: "gray8"
        case .i420: "i420"
        case .nv12: "nv12"
        case .yuyv: "yuyv"
        case .rgb24: "rgb24"
        case .bgr24: "bgr24"
        }
    }

    public var description: String { name }

    /// The four-character code as text, e.g. "YU12".
    public var fourCCString: String {
        let v = rawValue
        return String(decoding: [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)], as: UTF8.self)
    }

    public init?(name: String) {
        guard let match = PixelFormat.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = match
    }

    /// True when the first plane is full-resolution 8-bit luma, so the format can be read as
    /// `gray8` without any conversion (as GStreamer's zbar element reads I420 and NV12).
    public var firstPlaneIsLuma: Bool { self == .gray8 || self == .i420 || self == .nv12 }

    /// Whether a picture in this format is read as `target` with no conversion: it is `target`,
    /// or `target` is gray8 and this format's first plane is the luma.
    public func readsAs(_ target: PixelFormat) -> Bool { target == self || (target == .gray8 && firstPlaneIsLuma) }

    /// The geometry of each plane for a frame of the given size: (bytes per row, rows, samples per row).
    public func planeLayout(width: Int, height: Int) -> [(rowBytes: Int, rows: Int, samplesPerRow: Int)] {
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        switch self {
        case .gray8: return [(width, height, width)]
        case .i420: return [(width, height, width), (cw, ch, cw), (cw, ch, cw)]
        case .nv12: return [(width, height, width), (cw * 2, ch, cw)]
        case .yuyv: return [(cw * 4, height, width)]
        case .rgb24, .bgr24: return [(width * 3, height, width)]
        }
    }
}
