/// How a frame's YUV samples relate to colours: their range and the matrix between YUV and RGB.
/// Every pixel buffer carries one, from what its source says (V4L2's quantization and
/// ycbcr_enc, FFmpeg's color_range and colorspace), so that a conversion to RGB gives the
/// colours the camera saw instead of washed-out ones (limited-range YUV read as full range).
public struct Colorimetry: Sendable, Hashable, CustomStringConvertible {
    /// The values of cvhost_color_range in the plugin ABI header.
    public enum Range: UInt32, Sendable {
        /// 0-255 (JPEG, MJPEG webcams, RGB).
        case full = 1
        /// Luma 16-235, chroma 16-240 (video: H.264, most YUV cameras).
        case limited = 2
    }

    /// The values of cvhost_color_matrix in the plugin ABI header.
    public enum Matrix: UInt32, Sendable {
        /// ITU-R BT.601 (standard definition, JPEG).
        case bt601 = 1
        /// ITU-R BT.709 (high definition).
        case bt709 = 2
        /// ITU-R BT.2020 non-constant luminance (UHD).
        case bt2020 = 3

        /// The weights of red and blue in luma (Y = kr R + (1 - kr - kb) G + kb B).
        public var lumaWeights: (kr: Double, kb: Double) {
            switch self {
            case .bt601: (0.299, 0.114)
            case .bt709: (0.2126, 0.0722)
            case .bt2020: (0.2627, 0.0593)
            }
        }
    }

    public var range: Range
    public var matrix: Matrix

    public init(range: Range, matrix: Matrix) {
        self.range = range
        self.matrix = matrix
    }

    /// JPEG's: full range, BT.601. Also what cvhost gives YUV it makes from RGB.
    public static let jpeg = Colorimetry(range: .full, matrix: .bt601)

    /// What a source that says nothing most likely means, as video players guess it: limited
    /// range, BT.601 below 720 lines and BT.709 from 720 lines on.
    public static func videoDefault(height: Int) -> Colorimetry {
        Colorimetry(range: .limited, matrix: height >= 720 ? .bt709 : .bt601)
    }

    public var description: String {
        let m = switch matrix {
        case .bt601: "bt601"
        case .bt709: "bt709"
        case .bt2020: "bt2020"
        }
        return "\(range == .full ? "full" : "limited") range \(m)"
    }
}
