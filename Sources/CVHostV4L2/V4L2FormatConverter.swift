import CV4L2Shim
import CVHostCore
import Glibc

/// Frames in the formats only libv4lconvert reads (Bayer, the vendor formats of older USB
/// cameras), converted to I420 with it. libv4lconvert is the library behind libv4l2's format
/// emulation, used here directly and for these formats only: cvhost reads raw YUV, grey and RGB
/// itself and decodes MJPEG itself (MJPEGDecoder), so no frame of those goes through it.
///
/// Single-planar nodes only (libv4lconvert knows no other). Not thread-safe: the capture
/// thread's.
final class V4L2FormatConverter {
    enum Outcome {
        case frame(PixelBuffer)
        /// libv4lconvert refused the frame (short, damaged): counted as corrupt.
        case corrupt(String)
    }

    private let data: OpaquePointer
    private var source = v4l2_format()
    private var target = v4l2_format()
    private let width: Int
    private let height: Int
    private let device: String
    private let fourcc: String

    /// - Throws: `.unsupported` for a multi-planar node, or when libv4lconvert cannot be set up.
    init(layout: V4L2Layout, descriptor: V4L2Descriptor, type: V4L2BufferType, device: String) throws {
        fourcc = V4L2IO.fourCC(layout.fourcc)
        guard !type.isMultiPlanar, let plane = layout.memoryPlanes.first else {
            throw CaptureError(.unsupported, "\(device) delivers \(fourcc), which cvhost cannot read on a multi-planar node: "
                               + "choose another with --pixel-format")
        }
        guard let made = descriptor.withNumber({ v4lconvert_create($0) }), let made else {
            throw CaptureError(.unsupported, "cannot set up libv4lconvert for \(device)")
        }
        data = made
        width = layout.width
        height = layout.height
        self.device = device
        source.type = type.rawValue
        source.fmt.pix.width = UInt32(width)
        source.fmt.pix.height = UInt32(height)
        source.fmt.pix.pixelformat = layout.fourcc
        source.fmt.pix.bytesperline = UInt32(plane.bytesPerLine)
        source.fmt.pix.sizeimage = UInt32(plane.sizeImage)
        source.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        target = source
        target.fmt.pix.pixelformat = CV4L2Shim_PIX_FMT_YUV420
        target.fmt.pix.bytesperline = UInt32(width)
        target.fmt.pix.sizeimage = UInt32(V4L2FormatConverter.i420Size(width, height))
    }

    deinit { v4lconvert_destroy(data) }

    /// I420 as libv4lconvert writes it: Y, then U and V at half the width and height, packed.
    static func i420Size(_ w: Int, _ h: Int) -> Int { w * h + 2 * ((w + 1) / 2) * ((h + 1) / 2) }

    /// Converts one frame's bytes (what the driver filled) into a new I420 buffer.
    /// - Throws: `.unsupported` when libv4lconvert does not know the format at all.
    func convert(_ bytes: UnsafeRawBufferPointer) throws -> Outcome {
        let size = V4L2FormatConverter.i420Size(width, height)
        let out = ConvertedFrame(byteCount: size)
        let src = UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
        let written = v4lconvert_convert(data, &source, &target, src, Int32(bytes.count), out.bytes, Int32(size))
        guard written >= 0 else {
            let code = errno
            let message = String(cString: v4lconvert_get_error_message(data)).trimmingCharacters(in: ["\n", " "])
            if code == EINVAL {
                throw CaptureError(.unsupported, "\(device) delivers \(fourcc), which libv4lconvert cannot convert (\(message)): "
                                   + "choose another with --pixel-format")
            }
            return .corrupt(message)
        }
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        let planes = [
            PixelBuffer.Plane(base: UnsafeRawPointer(out.bytes), bytesPerRow: width, rows: height, samplesPerRow: width),
            PixelBuffer.Plane(base: UnsafeRawPointer(out.bytes + width * height), bytesPerRow: cw, rows: ch, samplesPerRow: cw),
            PixelBuffer.Plane(base: UnsafeRawPointer(out.bytes + width * height + cw * ch), bytesPerRow: cw, rows: ch, samplesPerRow: cw),
        ]
        // libv4lconvert computes YUV with BT.601's limited-range formulas.
        return .frame(PixelBuffer(format: .i420, width: width, height: height, planes: planes,
                                  colorimetry: Colorimetry(range: .limited, matrix: .bt601), owner: out))
    }
}

/// The memory of one converted frame, freed with the last pixel buffer using it.
private final class ConvertedFrame {
    let bytes: UnsafeMutablePointer<UInt8>
    init(byteCount: Int) { bytes = .allocate(capacity: byteCount) }
    deinit { bytes.deallocate() }
}
