import CFFmpeg
import CVHostCore

/// One keyframe decoded on its own (a snapshot from a record stream): a decoder made for its
/// stream's format, given the one packet, drained. Not kept between calls: snapshots are rare and a
/// camera's format may change between them.
enum KeyframeDecoder {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func picture(_ packet: EncodedPacket, name: String) throws(Failure) -> PixelBuffer {
        let parameters = packet.format.parameters
        guard let codec = avcodec_find_decoder(parameters.pointee.codec_id) else { throw Failure(description: "no decoder for its codec") }
        guard var context = avcodec_alloc_context3(codec) else { throw Failure(description: "out of memory") }
        var owned: UnsafeMutablePointer<AVCodecContext>? = context
        defer { avcodec_free_context(&owned) }
        guard avcodec_parameters_to_context(context, parameters) >= 0, avcodec_open2(context, codec, nil) >= 0 else {
            throw Failure(description: "its decoder did not open")
        }
        context = owned!
        guard var frame = av_frame_alloc() else { throw Failure(description: "out of memory") }
        var ownedFrame: UnsafeMutablePointer<AVFrame>? = frame
        defer { av_frame_free(&ownedFrame) }
        frame = ownedFrame!
        var sent = avcodec_send_packet(context, packet.packet)
        if sent >= 0 { sent = avcodec_send_packet(context, nil) }
        guard sent >= 0 || sent == CFFmpeg_AVERROR_EOF else { throw Failure(description: "its keyframe was refused: \(ffmpegError(sent))") }
        let got = avcodec_receive_frame(context, frame)
        guard got >= 0 else { throw Failure(description: "its keyframe gave no picture: \(ffmpegError(got))") }
        do {
            return try DecodedFrameReader().pixelBuffer(frame, input: name)
        } catch {
            throw Failure(description: "\(error)")
        }
    }
}
