import CFFmpeg

/// Frames FFmpeg decoded (video files, network streams, a camera's MJPEG), as pixel buffers.
///
/// A frame whose planes are in a format cvhost knows is wrapped without a copy (its reference
/// kept alive by the pixel buffer); 4:2:2 planar YUV, what most MJPEG webcams send, is read as
/// I420 without a copy too, by taking every other chroma row. Anything else is converted once
/// with libswscale: to I420 (keeping its range and matrix), RGB24, or gray8.
///
/// Not thread-safe: one reader per decoding thread (it keeps its swscale context).
public final class DecodedFrameReader {
    private var scaler: OpaquePointer?

    public init() {}

    deinit { sws_freeContext(scaler) }

    /// The decoded `frame` as a pixel buffer. `frame` may be unreferenced right after.
    /// - Throws: `.unsupportedInput` when its pixel format cannot be converted, naming `input`.
    public func pixelBuffer(_ frame: UnsafeMutablePointer<AVFrame>, input: String) throws -> PixelBuffer {
        let w = Int(frame.pointee.width), h = Int(frame.pointee.height)
        let avFormat = AVPixelFormat(rawValue: frame.pointee.format)
        let colorimetry = DecodedFrameReader.colorimetry(frame)
        if let direct = DecodedFrameReader.direct(avFormat), frame.pointee.linesize.0 > 0 {
            let owner = AVFrameReference(av_frame_clone(frame))
            guard let ref = owner.frame else { throw CaptureError(.streamFailed, "out of memory decoding \(input)") }
            let layout = direct.format.planeLayout(width: w, height: h)
            let (data, lines) = DecodedFrameReader.planes(ref.pointee)
            let planes = (0..<layout.count).map { i in
                PixelBuffer.Plane(base: UnsafeRawPointer(data[i]!), bytesPerRow: lines[i] * (i > 0 ? direct.chromaRowStep : 1),
                                  rows: layout[i].rows, samplesPerRow: layout[i].samplesPerRow)
            }
            return PixelBuffer(format: direct.format, width: w, height: h, planes: planes, colorimetry: colorimetry, owner: owner)
        }
        return try converted(frame, avFormat, colorimetry: colorimetry, input: input)
    }

    private func converted(_ frame: UnsafeMutablePointer<AVFrame>, _ avFormat: AVPixelFormat, colorimetry: Colorimetry,
                           input: String) throws -> PixelBuffer {
        let w = Int(frame.pointee.width), h = Int(frame.pointee.height)
        let target = DecodedFrameReader.conversionTarget(avFormat)
        scaler = sws_getCachedContext(scaler, Int32(w), Int32(h), avFormat, Int32(w), Int32(h), PixelConverter.avFormat(target),
                                      Int32(SWS_BILINEAR), nil, nil, nil)
        guard let scaler else {
            throw CaptureError(.unsupportedInput, "cannot convert \(input)'s pixel format \(pixelFormatName(avFormat))")
        }
        // YUV stays in its own range and matrix; RGB made from it is full range.
        let table = PixelConverter.coefficients(colorimetry.matrix)
        let full: Int32 = colorimetry.range == .full ? 1 : 0
        _ = sws_setColorspaceDetails(scaler, table, full, table, target.isRGB ? 1 : full, 0, 1 << 16, 1 << 16)
        let made = target.isRGB ? Colorimetry(range: .full, matrix: colorimetry.matrix) : colorimetry
        let (data, lines) = DecodedFrameReader.planes(frame.pointee)
        return PixelBuffer.allocate(format: target, width: w, height: h, colorimetry: made) { planes, strides in
            PixelConverter.scale(scaler, data.map { $0.map { UnsafePointer($0) } }, lines, height: h, into: planes, strides)
        }
    }

    /// A frame's first four planes and their bytes per line (AVFrame holds them in C arrays, tuples in Swift).
    private static func planes(_ f: AVFrame) -> ([UnsafeMutablePointer<UInt8>?], [Int]) {
        ([f.data.0, f.data.1, f.data.2, f.data.3], [f.linesize.0, f.linesize.1, f.linesize.2, f.linesize.3].map { Int($0) })
    }

    /// The cvhost format an FFmpeg format's planes can be read as, and every how many chroma
    /// rows one is taken (2 reads 4:2:2 as 4:2:0).
    static func direct(_ f: AVPixelFormat) -> (format: PixelFormat, chromaRowStep: Int)? {
        switch f {
        case AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P: (.i420, 1)
        case AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUVJ422P: (.i420, 2)
        case AV_PIX_FMT_GRAY8: (.gray8, 1)
        case AV_PIX_FMT_NV12: (.nv12, 1)
        case AV_PIX_FMT_YUYV422: (.yuyv, 1)
        case AV_PIX_FMT_RGB24: (.rgb24, 1)
        case AV_PIX_FMT_BGR24: (.bgr24, 1)
        default: nil
        }
    }

    static func conversionTarget(_ f: AVPixelFormat) -> PixelFormat {
        guard let desc = av_pix_fmt_desc_get(f) else { return .i420 }
        let flags = desc.pointee.flags
        if flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0 || flags & UInt64(AV_PIX_FMT_FLAG_PAL) != 0 { return .rgb24 }
        if desc.pointee.nb_components <= 2 { return .gray8 }  // grey, grey + alpha
        return .i420
    }

    /// The frame's range and matrix as FFmpeg read them from the stream; where the stream says
    /// nothing: full range for JPEG's formats, else limited, and `Colorimetry.videoDefault`'s matrix
    /// (BT.601 for full range, as JPEG defines it).
    static func colorimetry(_ frame: UnsafeMutablePointer<AVFrame>) -> Colorimetry {
        let f = frame.pointee
        let jpegFormat = [AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P, AV_PIX_FMT_YUVJ440P]
            .contains(AVPixelFormat(rawValue: f.format))
        let range: Colorimetry.Range = switch f.color_range {
        case AVCOL_RANGE_JPEG: .full
        case AVCOL_RANGE_MPEG: .limited
        default: jpegFormat ? .full : .limited
        }
        let matrix: Colorimetry.Matrix = switch f.colorspace {
        case AVCOL_SPC_BT709: .bt709
        case AVCOL_SPC_BT470BG, AVCOL_SPC_SMPTE170M, AVCOL_SPC_FCC: .bt601
        case AVCOL_SPC_BT2020_NCL, AVCOL_SPC_BT2020_CL: .bt2020
        default: range == .full ? .bt601 : Colorimetry.videoDefault(height: Int(f.height)).matrix
        }
        return Colorimetry(range: range, matrix: matrix)
    }
}

/// Keeps one reference to a decoded frame's buffers; freed when the last pixel buffer using it goes.
final class AVFrameReference {
    var frame: UnsafeMutablePointer<AVFrame>?
    init(_ frame: UnsafeMutablePointer<AVFrame>?) { self.frame = frame }
    deinit { av_frame_free(&frame) }
}

/// FFmpeg's words for an error code.
public func ffmpegError(_ code: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 128)
    av_strerror(code, &buffer, buffer.count)
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// FFmpeg's name for a pixel format.
public func pixelFormatName(_ f: AVPixelFormat) -> String {
    guard let name = av_get_pix_fmt_name(f) else { return "unknown" }
    return String(cString: name)
}
