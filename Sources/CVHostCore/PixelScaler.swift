import CFFmpeg

/// A picture scaled and converted in one pass (FrameScaling): libswscale with the converter's
/// flags (bilinear, accurate rounding, full chroma), from the source's pixels into the place the
/// scaling gives it in a new buffer, the rest padded. One pass reads the full-size source once and
/// writes only the small picture: a 1280x720 I420 frame made into 640x640 BGR costs a fraction of
/// converting it to 1280x720 BGR.
///
/// Downscaled, swscale's bilinear filter widens with the ratio (it averages what it skips, as an
/// area filter would): the picture has no aliasing, and differs by a level or two from OpenCV's
/// INTER_LINEAR, which samples two pixels whatever the ratio.
enum PixelScaler {
    static func scale(_ source: PixelBuffer, to target: PixelFormat, _ scaling: FrameScaling) -> PixelBuffer {
        let colorimetry = PixelConverter.colorimetry(converting: source, to: target)
        let content = scaling.content(sourceWidth: source.width, sourceHeight: source.height, evenOffsets: target.halvesChroma)
        let key = Scaler.Key(source: source.format, target: target, width: source.width, height: source.height,
                             outWidth: content.width, outHeight: content.height, from: source.colorimetry, to: colorimetry)
        return Scaler.with(key) { scaler in
            PixelBuffer.allocate(format: target, width: scaling.width, height: scaling.height, colorimetry: colorimetry) { dst, strides in
                if case .letterbox(let pad) = scaling.mode, content != .init(x: 0, y: 0, width: scaling.width, height: scaling.height) {
                    fill(dst, strides, format: target, width: scaling.width, height: scaling.height, grey: pad, range: colorimetry.range)
                }
                let placed = dst.indices.map { i in dst[i] + target.byteOffset(plane: i, x: content.x, y: content.y, stride: strides[i]) }
                PixelConverter.scale(scaler.context, source.planes.map { $0.base.assumingMemoryBound(to: UInt8.self) },
                                     source.planes.map(\.bytesPerRow), height: source.height, into: placed, strides)
            }
        }
    }

    /// Every pixel of a new buffer set to `grey` (a level of RGB): luma of that level in the
    /// buffer's range and neutral chroma for YUV.
    static func fill(_ planes: [UnsafeMutableRawPointer], _ strides: [Int], format: PixelFormat, width: Int, height: Int,
                     grey: UInt8, range: Colorimetry.Range) {
        let luma = range == .full || format.isRGB ? grey : UInt8((16 + Double(grey) * 219 / 255).rounded())
        for (i, layout) in format.planeLayout(width: width, height: height).enumerated() {
            let row = UnsafeMutableRawBufferPointer(start: planes[i], count: layout.rowBytes)
            switch format {
            case .yuyv:
                for b in 0..<layout.rowBytes { row[b] = b % 2 == 0 ? luma : 128 }
            default:
                row.initializeMemory(as: UInt8.self, repeating: i == 0 || format.isRGB ? luma : 128)
            }
            for r in 1..<max(1, layout.rows) {
                (planes[i] + r * strides[i]).copyMemory(from: planes[i], byteCount: layout.rowBytes)
            }
        }
    }
}

extension PixelFormat {
    /// Chroma at half the luma's width (and for I420 and NV12, height): offsets must be even.
    public var halvesChroma: Bool { self == .i420 || self == .nv12 || self == .yuyv }

    /// Where pixel (x, y) starts in plane `plane` (x and y even where chroma is halved).
    func byteOffset(plane: Int, x: Int, y: Int, stride: Int) -> Int {
        switch self {
        case .gray8: y * stride + x
        case .rgb24, .bgr24: y * stride + 3 * x
        case .yuyv: y * stride + 2 * x
        case .i420: plane == 0 ? y * stride + x : (y / 2) * stride + x / 2
        case .nv12: plane == 0 ? y * stride + x : (y / 2) * stride + x
        }
    }
}
