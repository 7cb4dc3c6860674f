import CFFmpeg
import CVHostCore

/// One clip being written: an input's encoded packets as they are (copied, never decoded or
/// encoded again) into an MP4 file by FFmpeg's mov muxer, its index moved to the front when it is
/// finished (`movflags=+faststart`: a browser plays it as it is downloaded). Timestamps start at 0.
///
/// Not thread-safe: one writer thread.
final class ClipWriter {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        /// The system's error, when a write failed (ENOSPC: the disk is full).
        var cause: Errno?
    }

    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let stream: UnsafeMutablePointer<AVStream>
    private let sourceTimeBase: AVRational
    /// The first packet's decode time (source time base): every time is moved back by it.
    private var base: Int64?
    /// For packets whose decode times are not known (an RTSP camera's): the frame's duration
    /// (source time base), from which decode times are made, `reorderFrames` behind.
    private let frameDuration: Int64?
    private var lastDts = Int64.min
    /// Frames a B-frame may come before its reference in decode order (two covers the usual
    /// I P B B and a B-pyramid's first level).
    static let reorderFrames: Int64 = 2
    private(set) var firstPtsNs: Int64?
    private(set) var lastPtsNs: Int64?
    private(set) var firstWallNs: Int64?
    private(set) var lastWallNs: Int64?
    private(set) var packets = 0

    /// Opens the file behind `descriptor` (one of the evidence folder's, made for it) and writes the header.
    /// - Parameter frameDuration: for a format whose decode times are not known, a frame's duration (its time base).
    init(descriptor: Int32, format: EncodedStreamFormat, frameDuration: Int64? = nil) throws(Failure) {
        self.frameDuration = format.decodeTimesKnown ? nil : max(1, frameDuration ?? 1)
        // FFmpeg opens files by name: the descriptor's own name in /proc (the file made with
        // O_EXCL | O_NOFOLLOW in the private folder, never a path someone could swap). The muxer
        // opens it again by that name to move the index to the front.
        let url = "file:/proc/self/fd/\(descriptor)"
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_alloc_output_context2(&ctx, nil, "mp4", url) >= 0, let ctx else {
            throw Failure(description: "FFmpeg has no mp4 muxer")
        }
        context = ctx
        guard let s = avformat_new_stream(ctx, nil), avcodec_parameters_copy(s.pointee.codecpar, format.parameters) >= 0 else {
            avformat_free_context(ctx)
            context = nil
            throw Failure(description: "no memory for a clip")
        }
        s.pointee.codecpar.pointee.codec_tag = 0  // the mp4 muxer's own tag for the codec
        s.pointee.time_base = format.timeBase
        stream = s
        sourceTimeBase = format.timeBase
        var rc = avio_open(&ctx.pointee.pb, url, AVIO_FLAG_WRITE)
        guard rc >= 0 else {
            avformat_free_context(ctx)
            context = nil
            throw Failure(description: "cannot open the clip: \(ffmpegError(rc))", cause: Errno(rawValue: -rc))
        }
        var options: OpaquePointer?
        av_dict_set(&options, "movflags", "+faststart", 0)
        rc = avformat_write_header(ctx, &options)
        av_dict_free(&options)
        guard rc >= 0 else {
            avio_closep(&ctx.pointee.pb)
            avformat_free_context(ctx)
            context = nil
            throw Failure(description: "the mp4 muxer refused the stream (\(ffmpegError(rc))): its codec cannot go into MP4 as it is",
                          cause: rc == -ENOSPC ? Errno(rawValue: ENOSPC) : nil)
        }
    }

    deinit {
        if let ctx = context {
            avio_closep(&ctx.pointee.pb)
            avformat_free_context(ctx)
        }
    }

    func write(_ packet: EncodedPacket) throws(Failure) {
        guard let ctx = context, let copy = av_packet_clone(packet.packet) else { throw Failure(description: "no memory for a clip's packet") }
        var owned: UnsafeMutablePointer<AVPacket>? = copy
        defer { av_packet_free(&owned) }
        let dts = copy.pointee.dts != Int64.min ? copy.pointee.dts : copy.pointee.pts
        let base = self.base ?? dts
        self.base = base
        // The camera's numbers (any Int64): arithmetic that holds at the bounds rather than trapping.
        if copy.pointee.pts != Int64.min { copy.pointee.pts = copy.pointee.pts.subtractingClamped(base) }
        if copy.pointee.dts != Int64.min { copy.pointee.dts = copy.pointee.dts.subtractingClamped(base) }
        if let d = frameDuration, copy.pointee.pts != Int64.min {
            // Decode times made up: a frame apart, `reorderFrames` behind the first frame's time, never
            // past the packet's own presentation time (a B-frame's comes before its reference's).
            let made = lastDts == Int64.min ? (-Self.reorderFrames).multipliedClamped(by: d) : lastDts.addingClamped(d)
            copy.pointee.dts = min(made, copy.pointee.pts)
            if copy.pointee.dts <= lastDts { copy.pointee.dts = lastDts.addingClamped(1) }
            lastDts = copy.pointee.dts
        }
        av_packet_rescale_ts(copy, sourceTimeBase, stream.pointee.time_base)
        copy.pointee.stream_index = stream.pointee.index
        copy.pointee.pos = -1
        let rc = av_interleaved_write_frame(ctx, copy)
        guard rc >= 0 else { throw Failure(description: "writing the clip failed: \(ffmpegError(rc))", cause: Errno(rawValue: -rc)) }
        firstPtsNs = firstPtsNs ?? packet.ptsNs
        lastPtsNs = max(lastPtsNs ?? packet.ptsNs, packet.ptsNs)
        firstWallNs = firstWallNs ?? packet.readWallNs
        lastWallNs = max(lastWallNs ?? packet.readWallNs, packet.readWallNs)
        packets += 1
    }

    /// Writes the index (at the front) and closes the file. - Returns: its size in bytes.
    func finish() throws(Failure) -> UInt64 {
        guard let ctx = context else { throw Failure(description: "the clip is closed") }
        defer {
            avformat_free_context(ctx)
            context = nil
        }
        let rc = av_write_trailer(ctx)
        let size = ctx.pointee.pb.map { UInt64(max(0, avio_size($0))) } ?? 0
        avio_closep(&ctx.pointee.pb)
        guard rc >= 0 else { throw Failure(description: "finishing the clip failed: \(ffmpegError(rc))", cause: Errno(rawValue: -rc)) }
        return size
    }
}
