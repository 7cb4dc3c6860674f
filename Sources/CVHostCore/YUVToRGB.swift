import CColourMatrix
import CYUV

/// YUV (I420, NV12, YUYV) to packed RGB or BGR, as plugins that ask for `rgb24`/`bgr24` get it:
/// chroma upsampled to the luma's size by libyuv's bilinear filter (each chroma sample sited at
/// the centre of the luma pixels it covers, as swscale and JPEG site it), then the range and
/// matrix applied in fixed point (CColourMatrix, vectorized). Within 2 levels of the exact
/// (floating point) conversion everywhere, at about a sixth of swscale's accurate path's time
/// (a 1280x720 frame: 0.6 ms against 3.9 ms; docs/inputs.md, "Colour").
enum YUVToRGB {
    static func converts(_ source: PixelFormat, to target: PixelFormat) -> Bool {
        [.i420, .nv12, .yuyv].contains(source) && target.isRGB
    }

    /// `source` in `target` (rgb24 or bgr24), with the colorimetry given (full range, the source's matrix).
    static func convert(_ source: PixelBuffer, to target: PixelFormat, colorimetry: Colorimetry) -> PixelBuffer {
        var matrix = matrix(source.colorimetry)
        return Scratch.pool.with(Scratch.Key(format: source.format, width: source.width, height: source.height)) { scratch in
            let luma = scratch.upsample(source)
            return PixelBuffer.allocate(format: target, width: source.width, height: source.height, colorimetry: colorimetry) { dst, strides in
                cvhost_yuv444_to_rgb24(luma.base, Int32(luma.stride), scratch.u, scratch.v, Int32(scratch.stride),
                                       dst[0].assumingMemoryBound(to: UInt8.self), Int32(strides[0]),
                                       Int32(source.width), Int32(source.height), &matrix, target == .bgr24 ? 1 : 0)
            }
        }
    }

    /// The fixed-point matrix for a range and matrix (ITU-R BT.601, BT.709, BT.2020 luma weights).
    static func matrix(_ c: Colorimetry) -> cvhost_colour_matrix {
        let (kr, kb) = c.matrix.lumaWeights
        let kg = 1 - kr - kb
        // Limited range: luma 16-235 and chroma 16-240 stretched to 0-255.
        let (yGain, cGain) = c.range == .full ? (1.0, 1.0) : (255.0 / 219, 255.0 / 224)
        func fixed(_ x: Double) -> Int32 { Int32((x * Double(1 << CVHOST_COLOUR_MATRIX_BITS)).rounded()) }
        return cvhost_colour_matrix(y_offset: c.range == .full ? 0 : 16, y_gain: fixed(yGain), r_v: fixed(2 * (1 - kr) * cGain),
                                    g_u: fixed(2 * (1 - kb) * kb / kg * cGain), g_v: fixed(2 * (1 - kr) * kr / kg * cGain),
                                    b_u: fixed(2 * (1 - kb) * cGain))
    }

    /// Memory for one frame size's full-resolution chroma (and, for NV12 and YUYV, the planes
    /// split out of it first), kept for reuse: a fresh allocation of this size would be a fresh
    /// mapping, each of its pages faulted in on every frame.
    final class Scratch: @unchecked Sendable {
        // @unchecked Sendable: used by one thread at a time (taken from the pool).
        struct Key: Hashable {
            let format: PixelFormat
            let width: Int
            let height: Int
        }

        static let pool = ReusePool<Key, Scratch>(make: Scratch.init)

        let key: Key
        /// The chroma planes' samples per row and rows in the source (YUYV: a row each row).
        let halfWidth: Int, halfRows: Int
        /// The upsampled planes: `stride` samples a row (twice the half width), `rows` rows.
        let stride: Int, rows: Int
        let u: UnsafeMutablePointer<UInt8>, v: UnsafeMutablePointer<UInt8>
        /// NV12 and YUYV: their chroma split into planes; YUYV: its luma too.
        let halfU: UnsafeMutablePointer<UInt8>, halfV: UnsafeMutablePointer<UInt8>, luma: UnsafeMutablePointer<UInt8>
        private let memory: Allocation

        private init(_ key: Key) {
            self.key = key
            halfWidth = (key.width + 1) / 2
            halfRows = key.format == .yuyv ? key.height : (key.height + 1) / 2
            stride = 2 * halfWidth
            rows = key.format == .yuyv ? key.height : 2 * halfRows
            let full = stride * rows, half = halfWidth * halfRows, lumaBytes = key.format == .yuyv ? stride * key.height : 0
            memory = Allocation(byteCount: 2 * full + 2 * half + lumaBytes)
            let base = memory.pointer.assumingMemoryBound(to: UInt8.self)
            (u, v, halfU, halfV, luma) = (base, base + full, base + 2 * full, base + 2 * full + half, base + 2 * full + 2 * half)
        }

        /// Fills `u` and `v` from the source's chroma; returns where its luma is (YUYV's: split out here).
        func upsample(_ source: PixelBuffer) -> (base: UnsafePointer<UInt8>, stride: Int) {
            let p = source.planes.map { $0.base.assumingMemoryBound(to: UInt8.self) }
            let s = source.planes.map { Int32($0.bytesPerRow) }
            let hw = Int32(halfWidth), hr = Int32(halfRows)
            var lumaPlane = (base: p[0], stride: source.planes[0].bytesPerRow)
            let (cu, cv, cs): (UnsafePointer<UInt8>, UnsafePointer<UInt8>, Int32)
            switch key.format {
            case .i420:
                (cu, cv, cs) = (p[1], p[2], s[1])
            case .nv12:
                SplitUVPlane(p[1], s[1], halfU, hw, halfV, hw, hw, hr)
                (cu, cv, cs) = (UnsafePointer(halfU), UnsafePointer(halfV), hw)
            default:
                // YUYV: luma and chroma apart (4:2:2: chroma at half width, every row).
                _ = YUY2ToI422(p[0], s[0], luma, Int32(stride), halfU, hw, halfV, hw, Int32(stride), Int32(key.height))
                (cu, cv, cs) = (UnsafePointer(halfU), UnsafePointer(halfV), hw)
                lumaPlane = (UnsafePointer(luma), stride)
            }
            ScalePlane(cu, cs, hw, hr, u, Int32(stride), Int32(stride), Int32(rows), kFilterBilinear)
            ScalePlane(cv, cs, hw, hr, v, Int32(stride), Int32(stride), Int32(rows), kFilterBilinear)
            return lumaPlane
        }
    }
}
