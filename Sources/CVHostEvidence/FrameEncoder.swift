import CFFmpeg
import CVHostCore

/// The video of an input that has no encoded stream to copy (the test pattern, a raw camera:
/// YUYV, NV12), encoded to H.264 for its clips: FFmpeg's libx264 through libavcodec, `veryfast`
/// with no B-frames and no look-ahead (`zerolatency`: a packet for each frame as it comes), a
/// keyframe a second, at `bitsPerPixel` of the picture a frame. An output of the input's session
/// like a plugin's that never holds the capture back (drop-late); it exists only while clips are
/// kept, and hands each packet to the input's clip recorder as a file's packets are.
final class FrameEncoder: VideoDataOutputDelegate, @unchecked Sendable {
    // @unchecked Sendable: the codec is used on the output's one worker thread only.
    let output: VideoDataOutput
    /// The input it encodes.
    let source: String
    private let observer: EncodedPacketObserver
    private let said: (String) -> Void
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var format: EncodedStreamFormat?
    private var size: (width: Int, height: Int)?
    private var lastPts = Int64.min
    private var failed = false

    /// The encoder's clock (90 kHz, as MPEG's) and the bits a frame per pixel (0.1: 2.8 Mbit/s at 720p30).
    static let timeBase = AVRational(num: 1, den: 90_000)
    static let bitsPerPixel = 0.1

    init(source: String, observer: EncodedPacketObserver, said: @escaping (String) -> Void) {
        self.source = source
        self.observer = observer
        self.said = said
        output = VideoDataOutput(label: "clips of \(source)")
        output.acceptedPixelFormats = [.i420]
        output.backpressure = .dropLate
        output.maxQueuedFrames = 2
        output.setSampleBufferDelegate(self)
    }

    deinit { close() }

    func videoDataOutput(_ output: VideoDataOutput, didOutput sample: SampleBuffer, pixelBuffer: PixelBuffer, context delivery: DeliveryContext) {
        guard !failed else { return }
        let pixels = pixelBuffer.format == .i420 ? pixelBuffer : pixelBuffer.converted(to: .i420)
        if let size, size != (pixels.width, pixels.height) {
            // A new size (a camera's new stream): a new stream of clips.
            flush()
            close()
            observer.encodedStreamEnded()
        }
        if context == nil {
            guard open(width: pixels.width, height: pixels.height, fps: 30) else {
                failed = true
                return
            }
        }
        guard let context, let frame else { return }
        guard av_frame_make_writable(frame) >= 0 else { return }
        pixels.copyI420(into: frame)
        // Media time at 90 kHz, never twice the same (a muxer refuses that).
        var pts = av_rescale_q(sample.presentationTimeNs, AVRational(num: 1, den: 1_000_000_000), Self.timeBase)
        if pts <= lastPts { pts = lastPts + 1 }
        lastPts = pts
        frame.pointee.pts = pts
        guard avcodec_send_frame(context, frame) >= 0 else { return }
        drain()
    }

    func videoDataOutput(_ output: VideoDataOutput, didDrop sample: SampleBuffer, reason: DropReason) {}

    func videoDataOutputDidFinish(_ output: VideoDataOutput, worker: Int) {
        flush()
        close()
        observer.encodedStreamEnded()
    }

    /// Opens libx264 for frames of this size. - Returns: false (said once) when it cannot.
    private func open(width: Int, height: Int, fps: Int) -> Bool {
        guard let codec = avcodec_find_encoder_by_name("libx264"), let c = avcodec_alloc_context3(codec) else {
            said("clips of raw video need FFmpeg's libx264 encoder, which this FFmpeg lacks: no clips of this input")
            return false
        }
        context = c
        c.pointee.width = Int32(width)
        c.pointee.height = Int32(height)
        c.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        c.pointee.time_base = Self.timeBase
        c.pointee.gop_size = Int32(fps)
        c.pointee.max_b_frames = 0
        c.pointee.bit_rate = Int64(Double(width * height * fps) * Self.bitsPerPixel)
        // The parameter sets in the codec's extradata, as MP4 keeps them.
        c.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        c.pointee.thread_count = 1
        // libx264's own options, through the open call's dictionary.
        var options: OpaquePointer?
        av_dict_set(&options, "preset", "veryfast", 0)
        av_dict_set(&options, "tune", "zerolatency", 0)
        let opened = avcodec_open2(c, codec, &options)
        av_dict_free(&options)
        guard opened >= 0, let f = av_frame_alloc(), let p = av_packet_alloc(),
              let parameters = avcodec_parameters_alloc() else {
            said("libx264 did not open for \(width)x\(height): no clips of this input")
            return false
        }
        defer {
            var owned: UnsafeMutablePointer<AVCodecParameters>? = parameters
            avcodec_parameters_free(&owned)
        }
        frame = f
        packet = p
        f.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        f.pointee.width = Int32(width)
        f.pointee.height = Int32(height)
        guard av_frame_get_buffer(f, 0) >= 0, avcodec_parameters_from_context(parameters, c) >= 0,
              let streamFormat = EncodedStreamFormat(copying: parameters, timeBase: Self.timeBase) else {
            said("no memory for encoding clips")
            return false
        }
        format = streamFormat
        size = (width, height)
        return true
    }

    /// Hands every packet the encoder has ready to the clips.
    private func drain() {
        guard let context, let packet, let format else { return }
        while avcodec_receive_packet(context, packet) == 0 {
            defer { av_packet_unref(packet) }
            let ns = av_rescale_q(packet.pointee.pts, Self.timeBase, AVRational(num: 1, den: 1_000_000_000))
            if let p = EncodedPacket(referencing: packet, ptsNs: ns, format: format) { observer.encodedPacket(p) }
        }
    }

    private func flush() {
        guard let context else { return }
        avcodec_send_frame(context, nil)
        drain()
    }

    private func close() {
        if context != nil { avcodec_free_context(&context) }
        if frame != nil { av_frame_free(&frame) }
        if packet != nil { av_packet_free(&packet) }
        format = nil
        size = nil
        lastPts = .min
    }
}
