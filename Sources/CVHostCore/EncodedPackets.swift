import CFFmpeg

/// An input's encoded video as FFmpeg read it, before decoding: the codec's parameters and time
/// base (what a muxer needs to write its packets to a file as they are), shared by its packets.
public final class EncodedStreamFormat: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; FFmpeg only reads the parameters.
    public let parameters: UnsafeMutablePointer<AVCodecParameters>
    public let timeBase: AVRational
    /// The packets' decode times are their own; false: only their presentation times are known (an
    /// RTSP camera's frames: RTP carries no decode time), so a muxer must make decode times up.
    public let decodeTimesKnown: Bool

    /// A copy of `parameters` (the demuxer's own go with it). nil when FFmpeg cannot allocate.
    public init?(copying parameters: UnsafePointer<AVCodecParameters>, timeBase: AVRational, decodeTimesKnown: Bool = true) {
        guard let p = avcodec_parameters_alloc() else { return nil }
        guard avcodec_parameters_copy(p, parameters) >= 0 else {
            var owned: UnsafeMutablePointer<AVCodecParameters>? = p
            avcodec_parameters_free(&owned)
            return nil
        }
        self.parameters = p
        self.timeBase = timeBase
        self.decodeTimesKnown = decodeTimesKnown
    }

    deinit {
        var owned: UnsafeMutablePointer<AVCodecParameters>? = parameters
        avcodec_parameters_free(&owned)
    }
}

/// One packet of an input's encoded video: a new reference to FFmpeg's data (no copy), its media
/// time as the frames' (ns from the stream's start), and whether a decoder can start at it.
public final class EncodedPacket: @unchecked Sendable {
    // @unchecked Sendable: the packet is not changed once made; a muxer reads it (and rescales a copy).
    public let packet: UnsafeMutablePointer<AVPacket>
    public let ptsNs: Int64
    public let isKeyframe: Bool
    public let format: EncodedStreamFormat
    /// When it was read (wall clock, ns since the epoch): a clip's wall times.
    public let readWallNs = HostClock.wallNs()

    /// A new reference to `packet`'s data. nil when FFmpeg cannot allocate.
    /// - Parameter keyframe: whether a decoder can start at it, when the packet's flags do not say (nil: they do).
    public init?(referencing packet: UnsafePointer<AVPacket>, ptsNs: Int64, format: EncodedStreamFormat, keyframe: Bool? = nil) {
        guard let p = av_packet_clone(packet) else { return nil }
        self.packet = p
        self.ptsNs = ptsNs
        isKeyframe = keyframe ?? (packet.pointee.flags & AV_PKT_FLAG_KEY != 0)
        self.format = format
    }

    deinit {
        var owned: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&owned)
    }

    public var size: Int { Int(packet.pointee.size) }
}

/// Sees an input's encoded packets as they are read (the evidence room's pre-roll), on the
/// capture thread: it must not wait.
public protocol EncodedPacketObserver: AnyObject, Sendable {
    func encodedPacket(_ packet: EncodedPacket)
    /// The stream ended (the input's end, or a connection lost: a new one may follow with a new format).
    func encodedStreamEnded()
}

/// Several observers of one stream's packets (a record stream's clips and its keyframes), each told in turn.
public final class EncodedPacketFanOut: EncodedPacketObserver {
    private let observers: [EncodedPacketObserver]

    public init(_ observers: [EncodedPacketObserver]) {
        self.observers = observers
    }

    public func encodedPacket(_ packet: EncodedPacket) { observers.forEach { $0.encodedPacket(packet) } }
    public func encodedStreamEnded() { observers.forEach { $0.encodedStreamEnded() } }
}

/// A device whose frames are decoded from an encoded stream (a file, a network camera): its
/// packets can be seen as read. Set before the session starts.
public protocol EncodedStreamSource: AnyObject {
    var packetObserver: EncodedPacketObserver? { get set }
}
