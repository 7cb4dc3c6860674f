import CFFmpeg
import CVHostCore
import Glibc

/// Whole frames of H.264 and H.265 from an RTSP camera, handed to the decoder as soon as their
/// last packet is in, not a frame later.
///
/// Why: FFmpeg's RTP depacketizer hands out each RTP packet (a NAL unit, or a fragment of one) and
/// ignores the RTP marker bit that ends a frame; its H.264 parser, which joins packets into frames,
/// can only tell that a frame ended when the next frame's first packet arrives: one frame interval
/// (33 ms at 30 fps) after the frame was all there. GStreamer's depayloader ends a frame on the
/// marker. Here the demuxer runs with its parsers off (AVFMT_FLAG_NOPARSE) on a thread of its own
/// that stamps each packet's arrival, and a frame is complete when a packet of the next one arrives
/// (as before, for certain) or when no packet has come for a gap after a packet that may end a
/// frame: a camera sends a frame's picture data in one burst (tenths of a millisecond apart on a
/// LAN) and the next frame a frame interval later. Slices may be sent as the encoder finishes each
/// (milliseconds apart), so the gap covers the pauses between them; most H.264 cameras cut every
/// frame into the same slices, which is learned. The decisions, and their rules, are
/// `AccessUnitJoiner`'s; this class holds the packets, the reader thread and the waiting.
///
/// The reader thread stops reading while `maxQueuedBytes` wait (the camera's TCP connection then
/// holds back, as it did when the capture thread read itself). A frame that never ends (a hostile
/// or broken camera sending packets of one timestamp without end) is dropped as damaged once past
/// the joiner's caps (`oversizedFrames`), and joining resumes at the next timestamp: the camera
/// keeps being read.
final class LiveAccessUnits: @unchecked Sendable {
    // @unchecked Sendable: `queue`, `queuedBytes`, `readerEnded` and `stopping` are touched with
    // `lock` held; the rest is the capture thread's own (next()).
    private enum Item {
        case packet(UnsafeMutablePointer<AVPacket>, arrivalNs: UInt64)
        case stalled
        case end(Int32)
    }

    static let maxQueuedBytes = 64 << 20

    private let lock = ConditionLock()
    private var queue: [Item] = []
    private var head = 0
    private var queuedBytes = 0
    private var readerEnded = false
    private var stopping = false
    private let interrupt: InterruptDeadline
    private let stallSeconds: Double
    private let name: String
    private let hevc: Bool

    // The capture thread's own.
    private var joiner = AccessUnitJoiner()
    /// The packets of the frame being joined.
    private var pending: [UnsafeMutablePointer<AVPacket>] = []
    private var carried: Item?
    private var endAfterFlush: Int32?

    /// Packets that came for a frame already handed over.
    var latePackets: Int { joiner.latePackets }
    /// Frames dropped as damaged for their size.
    var oversizedFrames: Int { joiner.oversizedFrames }
    /// When the first and the last packet of the frame last handed over arrived (monotonic ns).
    var lastFrameArrival: (first: UInt64, last: UInt64) { joiner.lastFrameArrival }

    /// Starts reading `format`'s `streamIndex` on a thread of its own. `interrupt` must be the one
    /// `format` calls back (its own: `stop()` cancels it).
    /// - Parameter name: what messages call the stream (no password).
    /// - Parameter hevc: H.265 (its NAL unit types are read otherwise than H.264's).
    init(format: UnsafeMutablePointer<AVFormatContext>, streamIndex: Int32, name: String, hevc: Bool, interrupt: InterruptDeadline,
         stallSeconds: Double) {
        self.name = name
        self.hevc = hevc
        self.interrupt = interrupt
        self.stallSeconds = stallSeconds
        let context = SendablePointer(format)
        SystemThread.start("cvhost-demux") { [self] in read(context.pointer, streamIndex) }
    }

    deinit {
        for case .packet(let p, _) in queue[head...] { var p: UnsafeMutablePointer<AVPacket>? = p; av_packet_free(&p) }
        if case .packet(let p, _) = carried { var p: UnsafeMutablePointer<AVPacket>? = p; av_packet_free(&p) }
        for p in pending { var p: UnsafeMutablePointer<AVPacket>? = p; av_packet_free(&p) }
    }

    /// Ends the reader thread and waits for it (before the format context is closed).
    func stop() {
        lock.withLock {
            stopping = true
            lock.broadcast()
        }
        interrupt.cancel()
        lock.withLock { while !readerEnded { lock.wait() } }
    }

    // MARK: - The reader thread

    private func read(_ format: UnsafeMutablePointer<AVFormatContext>, _ streamIndex: Int32) {
        var packet = av_packet_alloc()
        defer {
            av_packet_free(&packet)
            lock.withLock {
                readerEnded = true
                lock.broadcast()
            }
        }
        guard let packet else { return push(.end(-ENOMEM), bytes: 0) }
        while true {
            let go = lock.withLock {
                while queuedBytes > LiveAccessUnits.maxQueuedBytes && !stopping { lock.wait() }
                return !stopping
            }
            guard go else { return }
            interrupt.arm(seconds: stallSeconds)
            let read = av_read_frame(format, packet)
            interrupt.disarm()
            if read == CFFmpeg_AVERROR_EXIT {
                if interrupt.isCancelled { return push(.end(CFFmpeg_AVERROR_EOF), bytes: 0) }
                // As MediaDecoder does for a pipe: the next read waits for data again.
                if let pb = format.pointee.pb {
                    pb.pointee.error = 0
                    pb.pointee.eof_reached = 0
                }
                push(.stalled, bytes: 0)
                continue
            }
            if read < 0 { return push(.end(read), bytes: 0) }
            guard packet.pointee.stream_index == streamIndex else {
                av_packet_unref(packet)
                continue
            }
            guard let kept = av_packet_alloc() else { ResourceExhaustion.report("memory for a packet of \(name)", error: ENOMEM) }
            av_packet_move_ref(kept, packet)
            push(.packet(kept, arrivalNs: HostClock.monotonicNs()), bytes: Int(kept.pointee.size))
        }
    }

    private func push(_ item: Item, bytes: Int) {
        lock.withLock {
            queue.append(item)
            queuedBytes += bytes
            lock.broadcast()
        }
    }

    // MARK: - The capture thread

    /// The next whole frame as one packet (the caller frees it), nil at the end of the stream.
    /// - Throws: `StreamStalled` when no packet came for the stall time (reading goes on), a
    ///   `.streamFailed` error when reading failed.
    func next() throws -> UnsafeMutablePointer<AVPacket>? {
        if pending.isEmpty, let code = endAfterFlush {
            endAfterFlush = nil
            return try end(code)
        }
        while true {
            switch take() {
            case .gapElapsed:
                joiner.gapElapsed()
                return joined()
            case .item(.stalled):
                throw StreamStalled(seconds: stallSeconds)
            case .item(.end(let code)):
                if pending.isEmpty { return try end(code) }
                endAfterFlush = code
                joiner.ended()
                return joined()
            case .item(.packet(let p, let arrival)):
                // The first bytes are all the joiner reads of a packet (NAL and slice headers).
                let head = UnsafeRawBufferPointer(start: p.pointee.data, count: p.pointee.data == nil ? 0 : min(Int(p.pointee.size), 13))
                switch joiner.offer(AccessUnitJoiner.Packet(pts: p.pointee.pts, size: Int(p.pointee.size), arrivalNs: arrival, head: head, hevc: hevc)) {
                case .joined:
                    pending.append(p)
                case .handOver:
                    carried = .packet(p, arrivalNs: arrival)
                    return joined()
                case .oversized:
                    if joiner.oversizedFrames == 1 {
                        Log.warning("\(name): a frame of more than \(joiner.frameByteLimit) bytes or \(joiner.framePacketLimit) packets (the camera sent no "
                                    + "end to it) was dropped as damaged; reading goes on at the next frame", source: name)
                    }
                    free(p)
                    pending.forEach(free)
                    pending.removeAll(keepingCapacity: true)
                case .late, .discarded:
                    free(p)
                }
            }
        }
    }

    private func free(_ p: UnsafeMutablePointer<AVPacket>) {
        var p: UnsafeMutablePointer<AVPacket>? = p
        av_packet_free(&p)
    }

    private enum Taken {
        case item(Item)
        case gapElapsed
    }

    /// The next packet or event; or that the gap passed after a packet that may end a frame.
    private func take() -> Taken {
        if let c = carried {
            carried = nil
            return .item(c)
        }
        let deadline = joiner.deadline
        return lock.withLock {
            while true {
                if head < queue.count {
                    let item = queue[head]
                    head += 1
                    if case .packet(let p, _) = item { queuedBytes -= Int(p.pointee.size) }
                    if head == queue.count {
                        queue.removeAll(keepingCapacity: true)
                        head = 0
                    }
                    lock.broadcast()  // room for the reader
                    return .item(item)
                }
                if readerEnded { return .item(.end(CFFmpeg_AVERROR_EOF)) }
                if let deadline {
                    if HostClock.monotonicNs() >= deadline { return .gapElapsed }
                    lock.wait(untilMonotonicNs: deadline)
                } else {
                    lock.wait()
                }
            }
        }
    }

    /// The pending packets as one: the frame.
    private func joined() -> UnsafeMutablePointer<AVPacket>? {
        defer {
            pending.forEach(free)
            pending.removeAll(keepingCapacity: true)
        }
        // Within Int32: the joiner's caps keep a frame under its largest.
        let size = pending.reduce(0) { $0 + Int($1.pointee.size) }
        var unit = av_packet_alloc()
        guard let unit, let size32 = Int32(exactly: size), av_new_packet(unit, size32) == 0 else {
            av_packet_free(&unit)
            ResourceExhaustion.report("memory for a frame of \(name) (\(size) bytes)", error: ENOMEM)
        }
        var at = 0
        for p in pending {
            memcpy(unit.pointee.data + at, p.pointee.data, Int(p.pointee.size))
            at += Int(p.pointee.size)
            unit.pointee.flags |= p.pointee.flags
        }
        unit.pointee.pts = pending[0].pointee.pts
        unit.pointee.dts = unit.pointee.pts
        unit.pointee.stream_index = pending[0].pointee.stream_index
        return unit
    }

    private func end(_ code: Int32) throws -> UnsafeMutablePointer<AVPacket>? {
        if code == CFFmpeg_AVERROR_EOF { return nil }
        throw CaptureError(.streamFailed, "reading \(name) failed: \(ffmpegError(code))")
    }
}

/// A pointer handed to the reader thread, which alone uses it until it ends.
private struct SendablePointer<T>: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<T>
    init(_ pointer: UnsafeMutablePointer<T>) { self.pointer = pointer }
}
