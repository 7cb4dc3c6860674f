import CFFmpeg

/// Pixel format conversions between the formats cvhost knows, honouring the frame's range and
/// matrix. YUV to RGB, the one plugins ask for on every frame, is YUVToRGB's (within 2 levels of
/// the exact conversion, tested against it); every other pair is FFmpeg's libswscale's, the same
/// as `ffmpeg -vf scale=flags=bilinear+accurate_rnd+full_chroma_int+full_chroma_inp` given the
/// same range and matrix (tested pixel for pixel).
///
/// What a converted buffer's colorimetry is:
/// - YUV or grey from YUV: the source's, values untouched (grey is the luma as it is).
/// - RGB from YUV: full range, colours computed with the source's range and matrix.
/// - YUV or grey from RGB: full range BT.601 (JPEG's convention).
enum PixelConverter {
    /// Bilinear chroma, accurate rounding, chroma read and written at full horizontal
    /// resolution: no chroma blocks, and a right column of odd-width RGB that keeps its colour
    /// (without SWS_FULL_CHR_H_INP swscale gets it wrong by up to 98 levels).
    static let flags = SWS_BILINEAR | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT | SWS_FULL_CHR_H_INP

    static func convert(_ source: PixelBuffer, to target: PixelFormat) -> PixelBuffer {
        let colorimetry = colorimetry(converting: source, to: target)
        if YUVToRGB.converts(source.format, to: target) { return YUVToRGB.convert(source, to: target, colorimetry: colorimetry) }
        return swscale(source, to: target, colorimetry: colorimetry)
    }

    /// `source` in `target` by libswscale, with the colorimetry given.
    static func swscale(_ source: PixelBuffer, to target: PixelFormat, colorimetry: Colorimetry) -> PixelBuffer {
        let key = Scaler.Key(source: source.format, target: target, width: source.width, height: source.height,
                             outWidth: source.width, outHeight: source.height, from: source.colorimetry, to: colorimetry)
        return Scaler.with(key) { scaler in
            PixelBuffer.allocate(format: target, width: source.width, height: source.height, colorimetry: colorimetry) { dst, strides in
                scale(scaler.context, source.planes.map { $0.base.assumingMemoryBound(to: UInt8.self) }, source.planes.map(\.bytesPerRow),
                      height: source.height, into: dst, strides)
            }
        }
    }

    /// Runs a swscale context over a whole frame: its planes (at most four) into a new buffer's.
    static func scale(_ context: OpaquePointer, _ planes: [UnsafePointer<UInt8>?], _ strides: [Int], height: Int,
                      into dst: [UnsafeMutableRawPointer], _ dstStrides: [Int]) {
        // swscale reads four planes and four strides on each side.
        func four<T>(_ a: [T?]) -> [T?] { a + Array(repeating: nil, count: max(0, 4 - a.count)) }
        func four(_ a: [Int]) -> [Int32] { a.map { Int32($0) } + Array(repeating: 0, count: max(0, 4 - a.count)) }
        _ = sws_scale(context, four(planes), four(strides), 0, Int32(height),
                      four(dst.map { Optional($0.assumingMemoryBound(to: UInt8.self)) }), four(dstStrides))
    }

    static func colorimetry(converting source: PixelBuffer, to target: PixelFormat) -> Colorimetry {
        if source.format.isRGB { return target.isRGB ? source.colorimetry : .jpeg }
        return target.isRGB ? Colorimetry(range: .full, matrix: source.colorimetry.matrix) : source.colorimetry
    }

    static func avFormat(_ f: PixelFormat) -> AVPixelFormat {
        switch f {
        case .gray8: AV_PIX_FMT_GRAY8
        case .i420: AV_PIX_FMT_YUV420P
        case .nv12: AV_PIX_FMT_NV12
        case .yuyv: AV_PIX_FMT_YUYV422
        case .rgb24: AV_PIX_FMT_RGB24
        case .bgr24: AV_PIX_FMT_BGR24
        }
    }

    /// swscale's coefficient table for a matrix.
    static func coefficients(_ m: Colorimetry.Matrix) -> UnsafePointer<Int32> {
        switch m {
        case .bt601: sws_getCoefficients(SWS_CS_ITU601)
        case .bt709: sws_getCoefficients(SWS_CS_ITU709)
        case .bt2020: sws_getCoefficients(SWS_CS_BT2020)
        }
    }
}

/// One swscale context, set up for one conversion (and scaling, PixelScaler). Contexts are costly
/// to set up and not safe to share between threads, so each conversion takes one from a pool and
/// gives it back.
final class Scaler: @unchecked Sendable {
    // @unchecked Sendable: a context is used by one thread at a time (taken from the pool).
    struct Key: Hashable {
        let source: PixelFormat
        let target: PixelFormat
        let width: Int
        let height: Int
        /// The size it writes (the source's, for a conversion alone).
        let outWidth: Int
        let outHeight: Int
        let from: Colorimetry
        let to: Colorimetry
    }

    let context: OpaquePointer

    private static let pool = ReusePool<Key, Scaler>(make: Scaler.init)

    /// Runs `body` with a context for `key`.
    static func with<Result>(_ key: Key, _ body: (Scaler) throws -> Result) rethrows -> Result {
        try pool.with(key, body)
    }

    private init(_ key: Key) {
        let w = Int32(key.width), h = Int32(key.height)
        // Every pair of cvhost's formats is one swscale converts: a nil context is a broken install.
        guard let c = sws_getContext(w, h, PixelConverter.avFormat(key.source), Int32(key.outWidth), Int32(key.outHeight),
                                     PixelConverter.avFormat(key.target), PixelConverter.flags, nil, nil, nil) else {
            fatalError("libswscale cannot convert \(key.source) \(key.width)x\(key.height) to \(key.target) \(key.outWidth)x\(key.outHeight)")
        }
        context = c
        _ = sws_setColorspaceDetails(c, PixelConverter.coefficients(key.from.matrix), key.from.range == .full ? 1 : 0,
                                     PixelConverter.coefficients(key.to.matrix), key.to.range == .full ? 1 : 0,
                                     0, 1 << 16, 1 << 16)
    }

    deinit { sws_freeContext(context) }
}

extension PixelFormat {
    /// Packed RGB or BGR.
    public var isRGB: Bool { self == .rgb24 || self == .bgr24 }
}
