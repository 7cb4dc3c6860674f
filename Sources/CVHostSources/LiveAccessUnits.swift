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
/// (as before, for certain) or when no packet has come for `gap` after a packet that may end a
/// frame: a camera sends a frame's picture data in one burst (tenths of a millisecond apart on a
/// LAN) and the next frame a frame interval later. The gap follows the stream: three times the
/// longest pause seen inside a frame's picture data lately, 2 to 15 ms; a packet that arrives for
/// a frame already handed over (the gap was too short: that frame is decoded with what came, as
/// after a lost packet) is counted, dropped, and doubles the gap from then on. No frame ends by the
/// gap alone before its first slice (an access unit delimiter or parameter sets may come well before
/// it, as the encoder works), nor on a packet as full as the fullest seen (a fragment with more to come).
///
/// Slices may be sent as the encoder finishes each (milliseconds apart), so the gap covers the
/// pauses between them. But most H.264 cameras cut every frame into the same slices: once the
/// last 16 frames' last slices all began at the same macroblock, a frame is not taken as whole
/// before a slice begins there (whatever the pause), and then waits only for the rest of that
/// slice's own packets: a short gap (three times the longest pause seen lately between one NAL
/// unit's fragments, which a sender writes back to back, at least 2 ms, for this machine's own
/// scheduling of the reading thread), or none when the sender is seen to fill every fragment but a
/// NAL unit's last to the same size (as RTP payloaders do, up to the path's MTU: 32 fragments and
/// never a shorter one followed by more): then a shorter packet ends its NAL unit. A late packet
/// turns the learned layout off for good.
///
/// The reader thread stops reading while `maxQueuedBytes` wait (the camera's TCP connection then
/// holds back, as it did when the capture thread read itself). A frame that never ends (a hostile
/// or broken camera sending packets of one timestamp without end) is bounded: once its packets
/// pass 8 times the largest frame seen (4 to 32 MB: `largestFrameBytes`) or 8 times the most
/// packets of a frame (4,096 to 32,768), it is dropped as damaged (`oversizedFrames`), the rest of
/// its packets too, and joining resumes at the next timestamp: the camera keeps being read.
final class LiveAccessUnits: @unchecked Sendable {
    // @unchecked Sendable: `queue`, `queuedBytes`, `readerEnded` and `stopping` are touched with
    // `lock` held; the rest is the capture thread's own (next()).
    private enum Item {
        case packet(UnsafeMutablePointer<AVPacket>, arrivalNs: UInt64)
        case stalled
        case end(Int32)
    }

    static let maxQueuedBytes = 64 << 20
    /// The most bytes, and packets, one frame may have (whatever the frames seen so far).
    static let largestFrameBytes = 32 << 20
    static let mostFramePackets = 32_768
    static let shortestGapNs: UInt64 = 2_000_000
    static let longestGapNs: UInt64 = 15_000_000

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
    private var pending: [UnsafeMutablePointer<AVPacket>] = []
    private var pendingBytes = 0
    /// The largest frame handed over, in bytes and in packets (for the caps).
    private var largestSeen: (bytes: Int, packets: Int) = (0, 0)
    /// The pts of a frame dropped for its size: the rest of its packets are dropped too.
    private var discardingPTS: Int64?
    /// Frames dropped as damaged for their size.
    private(set) var oversizedFrames = 0
    private var pendingPTS: Int64 = 0
    /// A slice of the pending frame has begun (its picture data).
    private var pendingHasSlice = false
    private var lastArrivalNs: UInt64 = 0
    private var longestPauseInFrame: UInt64 = 0
    /// The longest pause inside each of the last frames.
    private var recentPauses: [UInt64] = []
    private var gapFloorNs = LiveAccessUnits.shortestGapNs
    /// The longest pause before a fragment that continues a NAL unit, in the pending frame; lately.
    private var longestFragmentPause: UInt64 = 0
    private var recentFragmentPauses: [UInt64] = []
    /// The first macroblocks of the pending frame's slices (H.264), and of each recent frame's last slice.
    private var pendingSliceStarts: [Int] = []
    private var recentLastSlices: [Int] = []
    /// No late packet yet: the learned slice layout and the short gap may be used.
    private var layoutTrusted = true
    /// Fragments followed by more of their NAL unit: as full as the fullest seen, or not.
    private var fragments: (full: Int, short: Int) = (0, 0)
    /// The most bytes of a NAL unit one packet has carried (the sender's fragment size).
    private var largestFragment: Int32 = 0
    private var carried: Item?
    private var endAfterFlush: Int32?
    /// The pts of the last frame handed over before a packet of the next one came (one of its
    /// packets arriving later is late).
    private var flushedByGap: Int64?
    /// Packets that came for a frame already handed over.
    private(set) var latePackets = 0
    /// When the first and the last packet of the frame last handed over arrived (monotonic ns).
    private(set) var lastFrameArrival: (first: UInt64, last: UInt64) = (0, 0)
    private var pendingFirstArrivalNs: UInt64 = 0

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
                flushedByGap = pendingPTS
                return joined()
            case .item(.stalled):
                throw StreamStalled(seconds: stallSeconds)
            case .item(.end(let code)):
                if pending.isEmpty { return try end(code) }
                endAfterFlush = code
                return joined()
            case .item(.packet(let p, let arrival)):
                if let discarding = discardingPTS, p.pointee.pts == discarding {
                    var p: UnsafeMutablePointer<AVPacket>? = p
                    av_packet_free(&p)
                    continue
                }
                discardingPTS = nil
                if let flushed = flushedByGap, p.pointee.pts == flushed, pending.isEmpty || pendingPTS != flushed {
                    // The gap was too short for this stream: wait longer from now on.
                    latePackets += 1
                    gapFloorNs = min(LiveAccessUnits.longestGapNs, max(gapFloorNs, gap) * 2)
                    layoutTrusted = false
                    var p: UnsafeMutablePointer<AVPacket>? = p
                    av_packet_free(&p)
                    continue
                }
                if !pending.isEmpty && p.pointee.pts != pendingPTS {
                    carried = .packet(p, arrivalNs: arrival)
                    return joined()
                }
                if pending.isEmpty {
                    pendingPTS = p.pointee.pts
                    pendingFirstArrivalNs = arrival
                    longestPauseInFrame = 0
                    longestFragmentPause = 0
                    pendingHasSlice = false
                    pendingSliceStarts.removeAll(keepingCapacity: true)
                } else if pendingHasSlice {
                    longestPauseInFrame = max(longestPauseInFrame, arrival - lastArrivalNs)
                    if !startsNAL(p) { longestFragmentPause = max(longestFragmentPause, arrival - lastArrivalNs) }
                }
                if !startsNAL(p), let before = pending.last {
                    if isFull(before) { fragments.full += 1 } else { fragments.short += 1 }
                }
                if startsSlice(p) {
                    pendingHasSlice = true
                    if !hevc, let mb = LiveAccessUnits.firstMacroblock(p) { pendingSliceStarts.append(mb) }
                }
                largestFragment = max(largestFragment, fragmentBytes(p))
                lastArrivalNs = arrival
                pending.append(p)
                pendingBytes += Int(p.pointee.size)
                if pendingBytes > frameByteLimit || pending.count > framePacketLimit { dropOversized() }
            }
        }
    }

    /// The most bytes the pending frame may have: 8 times the largest frame seen, 4 to 32 MB.
    private var frameByteLimit: Int { min(Self.largestFrameBytes, max(4 << 20, 8 * largestSeen.bytes)) }
    private var framePacketLimit: Int { min(Self.mostFramePackets, max(4096, 8 * largestSeen.packets)) }

    /// The pending frame has grown past its caps: dropped as damaged, with the rest of its packets.
    private func dropOversized() {
        if oversizedFrames == 0 {
            Log.warning("\(name): a frame of more than \(pendingBytes) bytes in \(pending.count) packets (the camera sent no end to it) "
                        + "was dropped as damaged; reading goes on at the next frame", source: name)
        }
        oversizedFrames += 1
        discardingPTS = pendingPTS
        for p in pending { var p: UnsafeMutablePointer<AVPacket>? = p; av_packet_free(&p) }
        pending.removeAll(keepingCapacity: true)
        pendingBytes = 0
        pendingHasSlice = false
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
                let layout = sliceLayout
                if pendingHasSlice, layout == nil || pendingSliceStarts.contains(layout!), let last = pending.last, !isFull(last) {
                    let deadline = lastArrivalNs + (layout == nil ? gap : fragmentsFilled ? 0 : shortGap)
                    if HostClock.monotonicNs() >= deadline { return .gapElapsed }
                    lock.wait(untilMonotonicNs: deadline)
                } else {
                    lock.wait()
                }
            }
        }
    }

    /// Whether a packet begins a NAL unit: the depacketizer starts each one, and the first
    /// fragment of one, with 00 00 00 01 (a packet without it continues the NAL unit before).
    private func startsNAL(_ p: UnsafeMutablePointer<AVPacket>) -> Bool {
        guard p.pointee.size > 4, let d = p.pointee.data else { return false }
        return d[0] == 0 && d[1] == 0 && d[2] == 0 && d[3] == 1
    }

    /// The bytes of a NAL unit a packet carries: without the start code and NAL unit header the
    /// depacketizer puts before a NAL unit's first fragment (the RTP packet's own payload).
    private func fragmentBytes(_ p: UnsafeMutablePointer<AVPacket>) -> Int32 {
        startsNAL(p) ? p.pointee.size - 4 - (hevc ? 2 : 1) : p.pointee.size
    }

    /// A packet as full as the sender's fragments: a NAL unit's fragment with more to come.
    private func isFull(_ p: UnsafeMutablePointer<AVPacket>) -> Bool { fragmentBytes(p) >= largestFragment }

    /// Whether a packet begins a slice (a VCL NAL unit; its header is the byte after the start code).
    private func startsSlice(_ p: UnsafeMutablePointer<AVPacket>) -> Bool {
        guard startsNAL(p), let d = p.pointee.data else { return false }
        if hevc { return (d[4] >> 1) & 0x3F < 32 }
        let type = d[4] & 0x1F
        return type >= 1 && type <= 5
    }

    /// An H.264 slice's first_mb_in_slice: the first exp-Golomb number after its NAL header (no
    /// emulation prevention byte can come before it in a frame of fewer than 65,535 macroblocks).
    static func firstMacroblock(_ p: UnsafeMutablePointer<AVPacket>) -> Int? {
        guard p.pointee.size >= 9, let d = p.pointee.data else { return nil }
        var bits: UInt64 = 0
        for i in 5..<min(Int(p.pointee.size), 13) { bits = bits << 8 | UInt64(d[i]) }
        let width = 8 * (min(Int(p.pointee.size), 13) - 5)
        bits <<= UInt64(64 - width)
        let zeros = bits.leadingZeroBitCount
        guard zeros < 24, 2 * zeros + 1 <= width else { return nil }
        return Int(bits >> UInt64(64 - (2 * zeros + 1))) - 1
    }

    /// The first macroblock of the slice that ends every recent frame (H.264), when the last 16
    /// frames agree and no packet came late: a frame is not whole before a slice begins there.
    private var sliceLayout: Int? {
        guard layoutTrusted, recentLastSlices.count >= 16, let last = recentLastSlices.last, last >= 0,
              recentLastSlices.allSatisfy({ $0 == last }) else { return nil }
        return last
    }

    /// The sender fills every fragment but a NAL unit's last: a shorter packet ends its NAL unit.
    private var fragmentsFilled: Bool { fragments.full >= 32 && fragments.short == 0 }

    /// How long after a frame's last packet it is taken as complete, once its last slice has begun.
    private var shortGap: UInt64 {
        min(gap, max(LiveAccessUnits.shortestGapNs, 3 * (recentFragmentPauses.max() ?? 0)))
    }

    /// How long after a frame's last packet it is taken as complete.
    private var gap: UInt64 {
        let longest = recentPauses.max() ?? 0
        return min(LiveAccessUnits.longestGapNs, max(gapFloorNs, 3 * longest))
    }

    /// The pending packets as one: the frame.
    private func joined() -> UnsafeMutablePointer<AVPacket>? {
        defer {
            for p in pending { var p: UnsafeMutablePointer<AVPacket>? = p; av_packet_free(&p) }
            pending.removeAll(keepingCapacity: true)
            pendingBytes = 0
        }
        recentPauses.append(longestPauseInFrame)
        if recentPauses.count > 32 { recentPauses.removeFirst() }
        recentFragmentPauses.append(longestFragmentPause)
        if recentFragmentPauses.count > 32 { recentFragmentPauses.removeFirst() }
        recentLastSlices.append(pendingSliceStarts.max() ?? -1)
        if recentLastSlices.count > 16 { recentLastSlices.removeFirst() }
        lastFrameArrival = (pendingFirstArrivalNs, lastArrivalNs)
        // Within Int32: the caps keep a frame under `largestFrameBytes`.
        let size = pendingBytes
        largestSeen = (max(largestSeen.bytes, size), max(largestSeen.packets, pending.count))
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
        unit.pointee.pts = pendingPTS
        unit.pointee.dts = pendingPTS
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
