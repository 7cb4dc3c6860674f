import CFFmpeg
import CVHostCore
import Glibc

/// Decodes the video stream of one file with FFmpeg's libavformat and libavcodec: video files
/// (MP4, MKV, AVI, ... with H.264, MJPEG, ...) and still images (PNG, JPEG, WebP, PPM, ...),
/// which FFmpeg reads as one-frame streams.
///
/// Why FFmpeg rather than OpenCV's videoio: it is a C API (no C++ interop in the host), it
/// hands out reference-counted frames that can be passed on without a copy, and it gives the
/// stream's own timestamps.
///
/// Not thread-safe: one decoder is used by one thread (the session's capture thread).
final class MediaDecoder {
    /// What messages call the input: a file's path, or a stream's location without its password.
    let path: String
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private let reader = DecodedFrameReader()
    private let streamIndex: Int32
    private let timeBase: AVRational
    private let startTime: Int64
    private var draining = false
    private(set) var framesDecoded: Int64 = 0
    /// The video stream's packets read (a frame each): more than the frames decoded when frames are
    /// skipped (FrameSkipping).
    private(set) var packetsRead: Int64 = 0
    /// Frames were skipped undecoded at some time (FrameSkipping).
    private(set) var hasSkipped = false
    /// That frames are skipped was said (once a frame was: most cameras send none to skip).
    private var saidSkipping = false, saidKeyframes = false
    /// Whether frames no other frame depends on are skipped, for consumers that take few.
    private var skipping = FrameSkipping(streamFrameRate: 0)
    /// Packets or frames the decoder refused as damaged; decoding goes on with the next one.
    private(set) var damaged = 0
    /// Frames of an RTSP camera dropped whole as damaged, for their size (a frame that never ended).
    var framesDroppedWhole: Int { liveUnits?.oversizedFrames ?? 0 }
    private var damagedInARow = 0
    /// So many damaged packets in a row means the rest of the file is not video any more.
    static let maxDamagedInARow = 100

    let width: Int
    let height: Int
    /// Frames per second from the container, 0 when unknown.
    let frameRate: Double
    /// The codec's name, e.g. "h264".
    let codecName: String
    /// Frames in the stream, 0 when the container does not say.
    let frameCountHint: Int64

    /// What a device reading this offers: the codec's name as its four-character code, the size,
    /// and the container's frame rate when it gives one.
    var deviceFormat: DeviceFormat {
        DeviceFormat(deviceFourCC: codecName.uppercased(), pixelFormat: nil, width: width, height: height,
                     frameRateRanges: frameRate > 0 ? [FrameRateRange(minFrameRate: frameRate, maxFrameRate: frameRate)] : [])
    }

    /// Bounds blocking reads of a live stream (nil for files).
    private let interrupt: InterruptDeadline?
    /// Seconds one packet read may block before `nextFrame` throws `StreamStalled`.
    private let stallSeconds: Double
    /// A pipe's descriptor FFmpeg reads (`pipe:FD`) and does not close: closed with the decoder.
    private var ownedDescriptor: Int32?
    /// An RTSP camera's H.264 or H.265: whole frames as their last packet arrives (nil: packets
    /// read here, frames joined by FFmpeg's parser).
    private var liveUnits: LiveAccessUnits?
    /// Opened with `framesOnArrival` for a codec whose RTP packets need FFmpeg's parser to become
    /// frames after all (not H.264 or H.265, which `LiveAccessUnits` joins, nor MJPEG, which the
    /// depacketizer joins itself on the marker): open it again without.
    private(set) var needsParser = false
    /// Sees each video packet as it is read (clips' pre-roll), when set.
    var packetObserver: EncodedPacketObserver? {
        didSet {
            if packetObserver != nil, packetFormat == nil, let stream = format?.pointee.streams[Int(streamIndex)] {
                packetFormat = EncodedStreamFormat(copying: stream.pointee.codecpar, timeBase: timeBase, decodeTimesKnown: liveUnits == nil)
            }
        }
    }
    private var packetFormat: EncodedStreamFormat?

    /// Opens `path` and its best video stream.
    /// - Throws: `.inputUnavailable` when the file cannot be opened, `.unsupportedInput` when it
    ///   has no decodable video.
    /// - Parameter path: PathText (a name that is not UTF-8 written with `\xNN` escapes).
    /// - Parameter maxPixels: a picture with more pixels is refused by the decoder before it is
    ///   given memory (0: FFmpeg's own limit).
    convenience init(path: String, maxPixels: Int = 0) throws {
        if String(validating: PathText.fileSystemBytes(path), as: UTF8.self) != nil {
            // "file:" so that a name with a colon ("cam1:2024.mp4") is not taken for a protocol.
            try self.init(url: "file:" + path, name: path, maxPixels: maxPixels)
        } else {
            // FFmpeg's names are C strings it prints as text: it opens the same file through the
            // /proc link of a descriptor opened on the bytes.
            let fd = PathText.openForReading(path)
            guard fd >= 0 else { throw CaptureError(.inputUnavailable, "cannot open \(path)", cause: .current) }
            do {
                try self.init(url: "file:/proc/self/fd/\(fd)", name: path, maxPixels: maxPixels, ownedDescriptor: fd)
            } catch {
                Glibc.close(fd)
                throw error
            }
        }
    }

    /// Opens `url` (anything FFmpeg opens: a file, `rtsp://...`, `pipe:0`) with FFmpeg's options
    /// `options` (e.g. rtsp_transport), and its best video stream.
    /// - Parameters:
    ///   - name: what messages call it (without a password).
    ///   - interrupt: when given, opening may take at most `openTimeout` seconds, a packet read at
    ///     most `stallSeconds`, and `interrupt.cancel()` ends a blocked call at once.
    ///   - lowDelay: hand each frame out as soon as its packet is decoded (a live camera): no frame
    ///     threads, which hold back a frame per extra thread (measured: 90 ms more capture-to-result
    ///     latency on a 1280x720@30 RTSP stream, benchmarks/rtsp_latency.py).
    ///   - framesOnArrival: an RTSP camera: its packets joined into frames by `LiveAccessUnits` as
    ///     they arrive, not by FFmpeg's parser a frame later (H.264, H.265; for another codec that
    ///     needs the parser, `needsParser` says to open it again without).
    /// - Throws: `.inputUnavailable` when it cannot be opened (in time), `.unsupportedInput` when
    ///   it has no decodable video.
    init(url: String, name: String, options: [(String, String)] = [], interrupt: InterruptDeadline? = nil,
         openTimeout: Double = 0, stallSeconds: Double = 0, lowDelay: Bool = false, framesOnArrival: Bool = false, maxPixels: Int = 0,
         ownedDescriptor: Int32? = nil) throws {
        self.path = name
        self.interrupt = interrupt
        self.stallSeconds = stallSeconds
        guard var ctx = avformat_alloc_context() else { throw CaptureError(.inputUnavailable, "out of memory opening \(name)") }
        if let interrupt {
            ctx.pointee.interrupt_callback = interrupt.callback
            interrupt.arm(seconds: openTimeout)
        }
        defer { interrupt?.disarm() }
        if framesOnArrival { ctx.pointee.flags |= AVFMT_FLAG_NOPARSE }
        var dictionary: OpaquePointer?
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        var opened: UnsafeMutablePointer<AVFormatContext>? = ctx
        var ret = avformat_open_input(&opened, url, nil, &dictionary)  // frees the context on failure
        av_dict_free(&dictionary)
        guard ret >= 0, let done = opened else {
            throw CaptureError(.inputUnavailable, "cannot open \(name): \(MediaDecoder.describe(ret, interrupt: interrupt, timeout: openTimeout))")
        }
        ctx = done
        format = ctx
        // Probing decodes a picture too: it gets the same limit as the decoder below.
        let streams = Int(ctx.pointee.nb_streams)
        let probeOptions = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: max(1, streams))
        probeOptions.initialize(repeating: nil, count: max(1, streams))
        if maxPixels > 0 {
            for i in 0..<streams { av_dict_set(&probeOptions[i], "max_pixels", String(maxPixels), 0) }
        }
        ret = avformat_find_stream_info(ctx, maxPixels > 0 ? probeOptions : nil)
        for i in 0..<max(1, streams) { av_dict_free(&probeOptions[i]) }
        probeOptions.deallocate()
        guard ret >= 0 else {
            avformat_close_input(&format)
            let code: CaptureError.Code = interrupt?.expired == true ? .inputUnavailable : .unsupportedInput
            throw CaptureError(code, "cannot read \(name): \(MediaDecoder.describe(ret, interrupt: interrupt, timeout: openTimeout))")
        }
        var decoder: UnsafePointer<AVCodec>?
        let index = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0)
        guard index >= 0, let decoder, let stream = ctx.pointee.streams[Int(index)] else {
            avformat_close_input(&format)
            throw CaptureError(.unsupportedInput, "\(path) has no video stream that FFmpeg can decode")
        }
        streamIndex = index
        timeBase = stream.pointee.time_base
        startTime = stream.pointee.start_time == Int64.min ? 0 : stream.pointee.start_time
        let rate = stream.pointee.avg_frame_rate
        frameRate = rate.den > 0 && rate.num > 0 ? Double(rate.num) / Double(rate.den) : 0
        frameCountHint = stream.pointee.nb_frames
        skipping = FrameSkipping(streamFrameRate: frameRate)
        codecName = String(cString: decoder.pointee.name)

        guard let cc = avcodec_alloc_context3(decoder) else {
            avformat_close_input(&format)
            throw CaptureError(.unsupportedInput, "cannot allocate a decoder for \(path)")
        }
        codec = cc
        avcodec_parameters_to_context(cc, stream.pointee.codecpar)
        cc.pointee.thread_count = 0  // let FFmpeg pick (frame threads for H.264)
        if maxPixels > 0 { cc.pointee.max_pixels = Int64(maxPixels) }
        if lowDelay {
            cc.pointee.thread_type = FF_THREAD_SLICE
            cc.pointee.flags |= AV_CODEC_FLAG_LOW_DELAY
        }
        ret = avcodec_open2(cc, decoder, nil)
        guard ret >= 0 else {
            avcodec_free_context(&codec)
            avformat_close_input(&format)
            throw CaptureError(.unsupportedInput, "cannot decode \(path) (\(codecName)): \(ffmpegError(ret))")
        }
        width = Int(cc.pointee.width)
        height = Int(cc.pointee.height)
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        self.ownedDescriptor = ownedDescriptor  // only now: until here, a failed open leaves it to the caller
        if framesOnArrival {
            if codecName == "h264" || codecName == "hevc", let interrupt {
                // A deadline of the reader's own (stopped with the decoder), cancelled with the stream's.
                let own = InterruptDeadline(parent: interrupt)
                ctx.pointee.interrupt_callback = own.callback
                liveUnits = LiveAccessUnits(format: ctx, streamIndex: index, name: name, hevc: codecName == "hevc", interrupt: own,
                                            stallSeconds: stallSeconds)
            }
            needsParser = liveUnits == nil && codecName != "mjpeg"
        }
    }

    deinit {
        packetObserver?.encodedStreamEnded()
        liveUnits?.stop()
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&codec)
        avformat_close_input(&format)
        if let ownedDescriptor { Glibc.close(ownedDescriptor) }
    }

    /// The next decoded frame and its presentation time in ns from the stream's start; nil at
    /// the end of the stream.
    /// - Throws: `.streamFailed` when reading the file fails.
    func nextFrame() throws -> (PixelBuffer, Int64)? {
        guard let codec, let frame, let packet, let format else { return nil }
        while true {
            let got = avcodec_receive_frame(codec, frame)
            if got == 0 {
                defer { av_frame_unref(frame) }
                let pts = presentationTimeNs(frame)
                let keyframes = skipping.keyframesOnly
                if !skipping.kept(ptsNs: pts) {
                    applySkipping()
                    Log.info(keyframes
                             ? "\(path): its keyframes now come farther apart than plugins taking \(FrameRateRange.format(skipping.neededFrameRate)) "
                               + "a second can wait: its other frames are decoded again"
                             : "\(path): its frames are decoded whole: without the frames no other depends on, the rest come too far "
                               + "apart for plugins taking \(FrameRateRange.format(skipping.neededFrameRate)) a second")
                } else if skipping.skips, !keyframes, !saidSkipping, packetsRead - framesDecoded - Int64(damaged) > 8 {
                    // More packets in than frames out than a decoder holds back: frames were skipped.
                    saidSkipping = true
                    Log.info("\(path): plugins take at most \(FrameRateRange.format(skipping.neededFrameRate)) of its \(FrameRateRange.format(frameRate)) frames "
                             + "a second: frames no other frame depends on (B-frames) are not decoded")
                }
                FrameTrace.mark(ptsNs: pts, "decoded")
                framesDecoded += 1
                return (try reader.pixelBuffer(frame, input: path), pts)
            }
            if got == CFFmpeg_AVERROR_EOF { return nil }
            if got != CFFmpeg_AVERROR_EAGAIN {
                // A damaged frame (a truncated or corrupt file): skip it; FFmpeg resynchronizes.
                try countDamage(got)
                continue
            }
            if draining { return nil }
            if let liveUnits {
                let late = liveUnits.latePackets
                let next = try liveUnits.next()
                // A packet that came after its frame was decoded: that frame was damaged. (A frame
                // dropped whole for its size is told with the next frame instead: framesDroppedWhole.)
                damaged += liveUnits.latePackets - late
                guard let unit = next else {
                    draining = true
                    avcodec_send_packet(codec, nil)
                    continue
                }
                var owned: UnsafeMutablePointer<AVPacket>? = unit
                defer { av_packet_free(&owned) }
                if FrameTrace.enabled {
                    let pts = nanoseconds(unit.pointee.pts)
                    FrameTrace.mark(ptsNs: pts, "first_packet", atNs: liveUnits.lastFrameArrival.first)
                    FrameTrace.mark(ptsNs: pts, "last_packet", atNs: liveUnits.lastFrameArrival.last)
                    FrameTrace.mark(ptsNs: pts, "to_decoder")
                }
                packetsRead += 1
                packetRead(unit)
                try send(unit, to: codec)
                continue
            }
            if let interrupt {
                if interrupt.isCancelled { return nil }
                interrupt.arm(seconds: stallSeconds)
            }
            let read = av_read_frame(format, packet)
            interrupt?.disarm()
            if read == CFFmpeg_AVERROR_EXIT, let interrupt {
                if interrupt.isCancelled { return nil }
                // A pipe's reader keeps the deadline's AVERROR_EXIT and would return it from every
                // later read, at once: new data and the stream's end would go unseen and the
                // capture thread spin. Clear it; the next read waits for data again.
                if let pb = format.pointee.pb {
                    pb.pointee.error = 0
                    pb.pointee.eof_reached = 0
                }
                throw StreamStalled(seconds: stallSeconds)
            }
            if read == CFFmpeg_AVERROR_EOF {
                draining = true
                avcodec_send_packet(codec, nil)
                continue
            }
            if read < 0 { throw CaptureError(.streamFailed, "reading \(path) failed: \(ffmpegError(read))") }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex else { continue }
            packetsRead += 1
            packetRead(packet)
            try send(packet, to: codec)
        }
    }

    /// The consumers now take at most `fps` frames a second (0: every frame): frames no other frame
    /// depends on are skipped while that is at most half the stream's rate (FrameSkipping).
    func need(framesPerSecond fps: Double, keyframesWillDo: Bool = false) {
        skipping.need(fps, keyframesWillDo: keyframesWillDo)
        applySkipping()
    }

    private func applySkipping() {
        let keyframes = skipping.keyframesOnly
        if skipping.skips || keyframes { hasSkipped = true }
        codec?.pointee.skip_frame = keyframes ? AVDISCARD_NONKEY : skipping.skips ? AVDISCARD_NONREF : AVDISCARD_DEFAULT
        if keyframes, !saidKeyframes, let interval = skipping.keyframeInterval {
            saidKeyframes = true
            Log.info("\(path): plugins take at most \(FrameRateRange.format(skipping.neededFrameRate)) of its frames a second and its keyframes "
                     + "come every \((interval * 100).rounded() / 100) s: only its keyframes are decoded")
        }
    }

    /// A video packet read, before it is decoded: its keyframes' interval measured (which may let
    /// keyframes alone be decoded), and the observer handed a reference to it with its media time as
    /// the frames have it. Its time and whether it is a keyframe are found once for both.
    private func packetRead(_ packet: UnsafeMutablePointer<AVPacket>) {
        let ts = packet.pointee.pts != Int64.min ? packet.pointee.pts : packet.pointee.dts
        guard ts != Int64.min else { return }
        let ptsNs = nanoseconds(ts), keyframe = isKeyframe(packet)
        let before = skipping.keyframesOnly
        skipping.read(keyframe: keyframe, ptsNs: ptsNs)
        if skipping.keyframesOnly != before { applySkipping() }
        guard let packetObserver, let packetFormat,
              let p = EncodedPacket(referencing: packet, ptsNs: ptsNs, format: packetFormat, keyframe: keyframe) else { return }
        packetObserver.encodedPacket(p)
    }

    /// Whether a decoder can start at `packet`: its flags say, or (an RTSP camera's frames joined
    /// here, with no parser to set them) its NAL units do.
    private func isKeyframe(_ packet: UnsafeMutablePointer<AVPacket>) -> Bool {
        if packet.pointee.flags & AV_PKT_FLAG_KEY != 0 { return true }
        guard liveUnits != nil, let data = packet.pointee.data else { return false }
        return AnnexBKeyframes.isKeyframe(UnsafeRawBufferPointer(start: data, count: Int(packet.pointee.size)), hevc: codecName == "hevc")
    }

    private func send(_ packet: UnsafeMutablePointer<AVPacket>, to codec: UnsafeMutablePointer<AVCodecContext>) throws {
        let sent = avcodec_send_packet(codec, packet)
        if sent < 0 && sent != CFFmpeg_AVERROR_EAGAIN {
            // A damaged packet: FFmpeg conceals what it can; keep going with the next one.
            try countDamage(sent)
        } else {
            damagedInARow = 0
        }
    }

    private func countDamage(_ code: Int32) throws {
        damaged += 1
        damagedInARow += 1
        if damagedInARow > MediaDecoder.maxDamagedInARow {
            throw CaptureError(.streamFailed, "decoding \(path) failed: \(ffmpegError(code)) (\(damagedInARow) damaged packets in a row)")
        }
    }

    /// FFmpeg's error in words, and "no answer within N s" when the deadline cut it short (FFmpeg's
    /// own code then varies by protocol: RTSP says invalid data).
    static func describe(_ code: Int32, interrupt: InterruptDeadline?, timeout: Double) -> String {
        if let interrupt, !interrupt.isCancelled, interrupt.expired {
            return "no answer within \(formatSeconds(timeout)) (--open-timeout)"
        }
        return ffmpegError(code)
    }

    /// FFmpeg's own log (decoder chatter about damaged data) only when asked for: cvhost reports
    /// damage itself, once, in plain words.
    static func setLibraryLogging(verbose: Bool) {
        av_log_set_level(verbose ? AV_LOG_WARNING : AV_LOG_QUIET)
    }

    private func presentationTimeNs(_ frame: UnsafeMutablePointer<AVFrame>) -> Int64 {
        let ts = frame.pointee.best_effort_timestamp
        if ts == Int64.min || timeBase.den == 0 {
            return frameRate > 0 ? Int64(Double(framesDecoded) / frameRate * 1e9) : framesDecoded * 1_000_000_000
        }
        return nanoseconds(ts)
    }

    /// A timestamp of the stream, in ns from its start.
    private func nanoseconds(_ ts: Int64) -> Int64 {
        // The stream's own numbers: any Int64 (a camera's clock, a hostile server), so no `-` that traps.
        av_rescale_q(ts.subtractingClamped(startTime), timeBase, AVRational(num: 1, den: 1_000_000_000))
    }
}

/// A live stream sent nothing for `seconds`: the session reports it as interrupted.
struct StreamStalled: Error {
    let seconds: Double
}

func formatSeconds(_ s: Double) -> String { s == s.rounded() ? "\(Int(s)) s" : "\(s) s" }
