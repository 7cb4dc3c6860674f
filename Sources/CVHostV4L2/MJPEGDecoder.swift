import CFFmpeg
import CVHostCore

/// A camera's MJPEG frames, decoded by cvhost with FFmpeg's JPEG decoder (libavcodec's mjpeg)
/// straight to the YUV planes the JPEG holds: 4:2:0 as it is, 4:2:2 (what most USB webcams
/// send) read as I420 without a copy, grey as gray8. No RGB detour, and the driver's buffer
/// goes back to it as soon as the frame is decoded.
///
/// Why not libv4l2's conversion: GStreamer turned it off by default in 2018 for "major bugs in
/// the emulation layer", it converts through a copy into a fixed format, and a damaged frame
/// comes out as a damaged picture. Why FFmpeg rather than TurboJPEG: cvhost links libavcodec
/// already, its JPEG decoder is SIMD-accelerated, hands out the JPEG's own planes in
/// reference-counted frames, and fills in the Huffman tables UVC cameras leave out.
///
/// A damaged frame is refused, never handed on: one that does not start with a JPEG's start
/// marker or end with its end marker (a frame cut short when the USB link dropped packets),
/// one the decoder reports errors in, or one of another size than the camera's format.
///
/// Not thread-safe: used by the capture thread only.
public final class MJPEGDecoder {
    public enum Outcome {
        case frame(PixelBuffer)
        /// Why the frame was refused (for the log at debug level; it is counted as corrupt).
        case corrupt(String)
    }

    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private let reader = DecodedFrameReader()
    private let width: Int
    private let height: Int
    private let device: String

    /// - Throws: `.unsupported` when this FFmpeg has no JPEG decoder.
    public init(width: Int, height: Int, device: String) throws {
        self.width = width
        self.height = height
        self.device = device
        guard let decoder = avcodec_find_decoder(AV_CODEC_ID_MJPEG), let cc = avcodec_alloc_context3(decoder) else {
            throw CaptureError(.unsupported, "\(device) sends MJPEG, and this FFmpeg has no JPEG decoder")
        }
        codec = cc
        // One thread: a frame is decoded as soon as it comes (no frame held back per thread).
        cc.pointee.thread_count = 1
        // Damaged entropy-coded data fails the frame instead of being concealed in the picture.
        // (Only that: the stricter checks, AV_EF_BITSTREAM and the like, would refuse the small
        // deviations from the standard that many webcams' JPEGs have and that decode fine.)
        cc.pointee.err_recognition = AV_EF_EXPLODE
        let ret = avcodec_open2(cc, decoder, nil)
        guard ret >= 0 else {
            avcodec_free_context(&codec)
            throw CaptureError(.unsupported, "cannot open FFmpeg's JPEG decoder for \(device): \(ffmpegError(ret))")
        }
        packet = av_packet_alloc()
        frame = av_frame_alloc()
    }

    deinit {
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&codec)
    }

    /// Decodes one frame's bytes (what the driver filled). The bytes are copied before this
    /// returns: the driver's buffer can be queued again at once.
    public func decode(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        guard let codec, let packet, let frame else { return .corrupt("decoder closed") }
        if let problem = MJPEGDecoder.markerProblem(bytes) { return .corrupt(problem) }
        // A packet that does not own its data: libavcodec copies it (with the padding it needs).
        packet.pointee.data = UnsafeMutablePointer(mutating: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
        packet.pointee.size = Int32(bytes.count)
        defer {
            packet.pointee.data = nil
            packet.pointee.size = 0
        }
        var ret = avcodec_send_packet(codec, packet)
        if ret < 0 { return .corrupt("not decodable: \(ffmpegError(ret))") }
        ret = avcodec_receive_frame(codec, frame)
        if ret < 0 { return .corrupt("not decodable: \(ffmpegError(ret))") }
        defer { av_frame_unref(frame) }
        if frame.pointee.decode_error_flags != 0 { return .corrupt("decoded with errors") }
        guard Int(frame.pointee.width) == width, Int(frame.pointee.height) == height else {
            return .corrupt("a \(frame.pointee.width)x\(frame.pointee.height) frame in a \(width)x\(height) stream")
        }
        do {
            return .frame(try reader.pixelBuffer(frame, input: device))
        } catch {
            return .corrupt("\(error)")
        }
    }

    /// Why `bytes` cannot be a whole JPEG, or nil: it must start with SOI (FF D8) and end with
    /// EOI (FF D9); the zero bytes some cameras pad a frame with are allowed after it.
    static func markerProblem(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return "no JPEG start marker" }
        var end = bytes.count
        while end > 2 && bytes[end - 1] == 0 { end -= 1 }
        guard bytes[end - 2] == 0xFF, bytes[end - 1] == 0xD9 else { return "cut short (no JPEG end marker)" }
        return nil
    }
}
