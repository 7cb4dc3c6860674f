import CFFmpeg

/// Frames as JPEG, for the live view and the snapshots of events: scaled down to a width (and cut
/// to a region) with libswscale and encoded by FFmpeg's mjpeg encoder (the encoder of the field at
/// hand; no code of our own for JPEG).
///
/// Not thread-safe: each user (a preview, a snapshot request, the snapshot writer) has its own, or holds a lock.
public final class JPEGEncoder {
    public struct EncodeError: Error, CustomStringConvertible {
        public let description: String
    }

    /// A region of a frame, in its pixels.
    public struct Region: Equatable, Sendable {
        public var x: Int, y: Int, width: Int, height: Int

        public init(x: Int, y: Int, width: Int, height: Int) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }

        /// Within a frame of `width` x `height`, on even pixels (4:2:0 chroma); nil when it is outside the frame.
        public func fitted(width w: Int, height h: Int) -> Region? {
            guard let (x0, cw) = Self.fit(x, width, within: w), let (y0, ch) = Self.fit(y, height, within: h) else { return nil }
            return Region(x: x0, y: y0, width: cw, height: ch)
        }

        /// One side of a region (`start`, `length`) within `0..<limit`: on even pixels and at least
        /// two (a region of one pixel at a frame's edge grows inward), or, on a frame one pixel
        /// across, that pixel (scaled up to two when encoded). Nil when it is outside.
        static func fit(_ start: Int, _ length: Int, within limit: Int) -> (start: Int, length: Int)? {
            let end = start.addingClamped(max(0, length))
            guard end > 0, start < limit, limit >= 1 else { return nil }
            if limit == 1 { return (0, 1) }
            var a = max(0, start) & ~1
            var n = (min(limit, end) - a) & ~1
            if n < 2 {
                n = 2
                a = min(a, (limit - 2) & ~1)
            }
            return (a, n)
        }
    }

    public init() {}

    /// The mjpeg encoder's quantizer, 2 (best) to 31: 5 is about libjpeg's quality 85, sharp
    /// enough to read a code's outline, a fifth of a raw frame's size.
    static let quantizer: Int32 = 5

    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var scaler: OpaquePointer?
    private var key: (width: Int, height: Int, source: PixelFormat, range: Colorimetry.Range, outWidth: Int, outHeight: Int)?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?

    deinit { release() }

    /// The size a frame of `width` x `height` is encoded at: at most `maxWidth` wide, the same
    /// aspect, even sides (4:2:0 chroma).
    public static func outputSize(width: Int, height: Int, maxWidth: Int) -> (width: Int, height: Int) {
        let w = min(width, max(16, maxWidth))
        let h = Int((Double(height) * Double(w) / Double(width)).rounded())
        return (max(2, w & ~1), max(2, h & ~1))
    }

    /// Encodes one frame (or `region` of it), scaled to at most `maxWidth` pixels wide.
    public func encode(_ pixels: PixelBuffer, maxWidth: Int, region: Region? = nil) throws(EncodeError) -> [UInt8] {
        // YUV 4:2:0 first (cvhost's conversion: none for i420, the right range and matrix from RGB).
        let yuv = pixels.format == .i420 ? pixels : pixels.converted(to: .i420)
        let whole = Region(x: 0, y: 0, width: yuv.width, height: yuv.height)
        guard let cut = (region ?? whole).fitted(width: yuv.width, height: yuv.height) else {
            throw EncodeError(description: "the region is outside the \(yuv.width)x\(yuv.height) frame")
        }
        let out = Self.outputSize(width: cut.width, height: cut.height, maxWidth: maxWidth)
        try prepare(yuv, cut, out)
        guard let frame, let packet, let context, let scaler else { throw EncodeError(description: "the JPEG encoder is not open") }
        guard av_frame_make_writable(frame) >= 0 else { throw EncodeError(description: "no memory for a JPEG frame") }
        // Scaled and, for limited-range video, stretched to JPEG's full range (the matrix stays:
        // a BT.709 source's hues shift slightly, which a preview can bear).
        // The region's first pixel in each plane (the chroma planes at half the resolution).
        var src: [UnsafePointer<UInt8>?] = yuv.planes.enumerated().map { i, plane in
            let (x, y) = i == 0 ? (cut.x, cut.y) : (cut.x / 2, cut.y / 2)
            return UnsafePointer(plane.base.assumingMemoryBound(to: UInt8.self) + y * plane.bytesPerRow + x)
        } + [nil]
        var srcStride: [Int32] = yuv.planes.map { Int32($0.bytesPerRow) } + [0]
        let dst = [frame.pointee.data.0, frame.pointee.data.1, frame.pointee.data.2, frame.pointee.data.3]
        let dstStride = [frame.pointee.linesize.0, frame.pointee.linesize.1, frame.pointee.linesize.2, frame.pointee.linesize.3]
        _ = src.withUnsafeMutableBufferPointer { s in
            srcStride.withUnsafeMutableBufferPointer { ss in
                sws_scale(scaler, s.baseAddress, ss.baseAddress, 0, Int32(cut.height), dst, dstStride)
            }
        }
        frame.pointee.pts += 1
        frame.pointee.quality = Self.quantizer * FF_QP2LAMBDA
        var rc = avcodec_send_frame(context, frame)
        guard rc >= 0 else { throw EncodeError(description: "the JPEG encoder refused a frame (\(rc))") }
        rc = avcodec_receive_packet(context, packet)
        guard rc >= 0, let data = packet.pointee.data else { throw EncodeError(description: "the JPEG encoder gave no picture (\(rc))") }
        defer { av_packet_unref(packet) }
        return Array(UnsafeBufferPointer(start: data, count: Int(packet.pointee.size)))
    }

    /// Opens the encoder and the scaler for this size and format, unless open for them already.
    private func prepare(_ yuv: PixelBuffer, _ cut: Region, _ out: (width: Int, height: Int)) throws(EncodeError) {
        if let k = key, k.width == cut.width, k.height == cut.height, k.source == yuv.format, k.range == yuv.colorimetry.range,
           k.outWidth == out.width, k.outHeight == out.height {
            return
        }
        release()
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG), let c = avcodec_alloc_context3(codec) else {
            throw EncodeError(description: "FFmpeg has no mjpeg encoder")
        }
        context = c
        c.pointee.width = Int32(out.width)
        c.pointee.height = Int32(out.height)
        c.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        // Full range: what JPEG is (and what the mjpeg encoder takes YUV420P as, without the deprecated YUVJ formats).
        c.pointee.color_range = AVCOL_RANGE_JPEG
        c.pointee.time_base = AVRational(num: 1, den: 25)
        c.pointee.flags |= AV_CODEC_FLAG_QSCALE
        c.pointee.global_quality = Self.quantizer * FF_QP2LAMBDA
        guard avcodec_open2(c, codec, nil) >= 0 else { throw EncodeError(description: "the mjpeg encoder did not open") }
        guard let f = av_frame_alloc(), let p = av_packet_alloc() else { throw EncodeError(description: "no memory for JPEG encoding") }
        frame = f
        packet = p
        f.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        f.pointee.width = Int32(out.width)
        f.pointee.height = Int32(out.height)
        f.pointee.color_range = AVCOL_RANGE_JPEG
        guard av_frame_get_buffer(f, 0) >= 0 else { throw EncodeError(description: "no memory for a JPEG frame") }
        guard let s = sws_getContext(Int32(cut.width), Int32(cut.height), AV_PIX_FMT_YUV420P, Int32(out.width), Int32(out.height),
                                     AV_PIX_FMT_YUV420P, SWS_BILINEAR, nil, nil, nil) else {
            throw EncodeError(description: "libswscale cannot scale \(cut.width)x\(cut.height) to \(out.width)x\(out.height)")
        }
        scaler = s
        let coefficients = sws_getCoefficients(SWS_CS_ITU601)
        _ = sws_setColorspaceDetails(s, coefficients, yuv.colorimetry.range == .full ? 1 : 0, coefficients, 1, 0, 1 << 16, 1 << 16)
        key = (cut.width, cut.height, yuv.format, yuv.colorimetry.range, out.width, out.height)
    }

    private func release() {
        if context != nil { avcodec_free_context(&context) }
        if frame != nil { av_frame_free(&frame) }
        if packet != nil { av_packet_free(&packet) }
        if let s = scaler { sws_freeContext(s) }
        scaler = nil
        key = nil
    }
}
