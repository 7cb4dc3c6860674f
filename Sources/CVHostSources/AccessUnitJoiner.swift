/// The decisions of joining an RTSP camera's H.264 or H.265 packets into whole frames as they
/// arrive (`LiveAccessUnits` holds the packets and the threads; this holds what it knows of them):
/// fed each packet's facts with its arrival time, it says what to do with it, and when the frame
/// being joined may be taken as whole though no packet of the next one has come. A value, so that
/// its heuristics are tested and fuzzed with packets and times of the test's choosing.
///
/// The rules (why: `LiveAccessUnits`):
/// - A packet of another timestamp ends the frame being joined (for certain).
/// - Else the frame is whole once `gap` passed after a packet that may end it: one not as full as
///   the fullest fragment seen (a fragment with more to come is full), and only once a slice has
///   begun. The gap is three times the longest pause inside a frame's picture data lately, 2 to 15 ms.
/// - H.264 frames the camera cuts into the same slices: once the last 16 frames' last slices began
///   at one macroblock, the frame is not whole before a slice begins there, and then only the rest
///   of that slice's packets are waited for (`shortGap`, or none once every fragment but a NAL
///   unit's last is seen to be full).
/// - A packet of a frame already handed over by the gap is late: dropped, counted, and the gap
///   doubles from then on; the learned slice layout is not trusted any more.
/// - A frame whose packets pass 8 times the largest frame seen (4 to 32 MB) or 8 times the most
///   packets of one (4,096 to 32,768) is dropped as damaged, with the rest of its packets.
public struct AccessUnitJoiner: Sendable {
    public init() {}

    /// What the joiner reads of a packet: its timestamp, size and arrival, and its first bytes.
    public struct Packet: Sendable {
        public var pts: Int64
        public var size: Int
        public var arrivalNs: UInt64
        /// The packet begins a NAL unit (the depacketizer starts each with 00 00 00 01).
        public var startsNAL: Bool
        /// It begins a slice (a VCL NAL unit).
        public var startsSlice: Bool
        /// An H.264 slice's first macroblock.
        public var firstMacroblock: Int?
        /// The bytes of its NAL unit it carries (without the start code and NAL header the
        /// depacketizer puts before a NAL unit's first fragment).
        public var fragmentBytes: Int

        /// The facts of a packet of `size` bytes whose first bytes are `head` (at least 13 of them when it has as many).
        public init(pts: Int64, size: Int, arrivalNs: UInt64, head: UnsafeRawBufferPointer, hevc: Bool) {
            self.pts = pts
            self.size = size
            self.arrivalNs = arrivalNs
            startsNAL = size > 4 && head.count > 4 && head[0] == 0 && head[1] == 0 && head[2] == 0 && head[3] == 1
            if startsNAL {
                startsSlice = hevc ? (head[4] >> 1) & 0x3F < 32 : (1...5).contains(head[4] & 0x1F)
            } else {
                startsSlice = false
            }
            firstMacroblock = startsSlice && !hevc ? Self.firstMacroblock(head.prefix(size)) : nil
            fragmentBytes = startsNAL ? size - 4 - (hevc ? 2 : 1) : size
        }

        /// An H.264 slice's first_mb_in_slice: the first exp-Golomb number after its NAL header (no
        /// emulation prevention byte can come before it in a frame of fewer than 65,535 macroblocks).
        static func firstMacroblock(_ d: UnsafeRawBufferPointer.SubSequence) -> Int? {
            guard d.count >= 9 else { return nil }
            let end = min(d.count, 13)
            var bits: UInt64 = 0
            for i in 5..<end { bits = bits << 8 | UInt64(d[d.startIndex + i]) }
            let width = 8 * (end - 5)
            bits <<= UInt64(64 - width)
            let zeros = bits.leadingZeroBitCount
            guard zeros < 24, 2 * zeros + 1 <= width else { return nil }
            return Int(bits >> UInt64(64 - (2 * zeros + 1))) - 1
        }
    }

    public enum Decision: Hashable, Sendable {
        /// Joined to the frame being joined.
        case joined
        /// The frame being joined is whole (a packet of the next one came): hand it over, then
        /// offer this packet again.
        case handOver
        /// A packet of a frame the gap already handed over: dropped (counted in `latePackets`).
        case late
        /// The frame being joined grew past its caps: it is dropped, this packet too (counted in `oversizedFrames`).
        case oversized
        /// Another packet of a frame dropped for its size: dropped.
        case discarded
    }

    public static let shortestGapNs: UInt64 = 2_000_000
    public static let longestGapNs: UInt64 = 15_000_000
    /// The most bytes, and packets, one frame may have (whatever the frames seen so far).
    static let largestFrameBytes = 32 << 20
    static let mostFramePackets = 32_768

    /// The frame being joined: its timestamp, packets and bytes.
    private(set) var pendingPTS: Int64 = 0
    public private(set) var pendingPackets = 0
    public private(set) var pendingBytes = 0
    /// A slice of the pending frame has begun (its picture data).
    private var pendingHasSlice = false
    private var pendingFirstArrivalNs: UInt64 = 0
    private var lastArrivalNs: UInt64 = 0
    /// The last packet's NAL unit bytes (whether it is as full as a fragment with more to come).
    private var lastFragmentBytes = 0
    private var longestPauseInFrame: UInt64 = 0
    /// The longest pause inside each of the last frames.
    private var recentPauses: [UInt64] = []
    private var gapFloorNs = AccessUnitJoiner.shortestGapNs
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
    private var largestFragment = 0
    /// The pts of the last frame handed over by the gap (one of its packets arriving later is late).
    private var flushedByGap: Int64?
    /// The largest frame handed over, in bytes and in packets (for the caps).
    private var largestSeen: (bytes: Int, packets: Int) = (0, 0)
    /// The pts of a frame dropped for its size: the rest of its packets are dropped too.
    private var discardingPTS: Int64?

    /// Packets that came for a frame already handed over.
    public private(set) var latePackets = 0
    /// Frames dropped as damaged for their size.
    public private(set) var oversizedFrames = 0
    /// When the first and the last packet of the frame last handed over arrived (monotonic ns).
    private(set) var lastFrameArrival: (first: UInt64, last: UInt64) = (0, 0)

    public var isJoining: Bool { pendingPackets > 0 }

    /// What to do with packet `p`.
    public mutating func offer(_ p: Packet) -> Decision {
        if let discarding = discardingPTS, p.pts == discarding { return .discarded }
        discardingPTS = nil
        if let flushed = flushedByGap, p.pts == flushed, !isJoining || pendingPTS != flushed {
            // The gap was too short for this stream: wait longer from now on.
            latePackets += 1
            gapFloorNs = min(Self.longestGapNs, max(gapFloorNs, gap) * 2)
            layoutTrusted = false
            return .late
        }
        if isJoining && p.pts != pendingPTS {
            handedOver()
            return .handOver
        }
        if !isJoining {
            pendingPTS = p.pts
            pendingFirstArrivalNs = p.arrivalNs
            longestPauseInFrame = 0
            longestFragmentPause = 0
            pendingHasSlice = false
            pendingSliceStarts.removeAll(keepingCapacity: true)
        } else if pendingHasSlice {
            // Arrival times come from one clock, but a test or a fuzzer may go back: no pause then.
            let pause = p.arrivalNs > lastArrivalNs ? p.arrivalNs - lastArrivalNs : 0
            longestPauseInFrame = max(longestPauseInFrame, pause)
            if !p.startsNAL { longestFragmentPause = max(longestFragmentPause, pause) }
        }
        if !p.startsNAL && isJoining {
            if lastFragmentBytes >= largestFragment { fragments.full += 1 } else { fragments.short += 1 }
        }
        if p.startsSlice {
            pendingHasSlice = true
            if let mb = p.firstMacroblock { pendingSliceStarts.append(mb) }
        }
        largestFragment = max(largestFragment, p.fragmentBytes)
        lastFragmentBytes = p.fragmentBytes
        lastArrivalNs = p.arrivalNs
        pendingPackets += 1
        pendingBytes += p.size
        if pendingBytes > frameByteLimit || pendingPackets > framePacketLimit {
            oversizedFrames += 1
            discardingPTS = pendingPTS
            resetPending()
            return .oversized
        }
        return .joined
    }

    /// When the frame being joined may be taken as whole if no packet comes before (monotonic
    /// ns), or nil: not before a packet comes.
    public var deadline: UInt64? {
        let layout = sliceLayout
        guard pendingHasSlice, layout == nil || pendingSliceStarts.contains(layout!), lastFragmentBytes < largestFragment else { return nil }
        return lastArrivalNs + (layout == nil ? gap : fragmentsFilled ? 0 : shortGap)
    }

    /// The deadline passed with no packet: the frame being joined is handed over.
    public mutating func gapElapsed() {
        flushedByGap = pendingPTS
        handedOver()
    }

    /// The stream ended: the frame being joined is handed over as it is.
    public mutating func ended() { handedOver() }

    /// The most bytes the pending frame may have: 8 times the largest frame seen, 4 to 32 MB.
    public var frameByteLimit: Int { min(Self.largestFrameBytes, max(4 << 20, 8 * largestSeen.bytes)) }
    public var framePacketLimit: Int { min(Self.mostFramePackets, max(4096, 8 * largestSeen.packets)) }

    /// How long after a frame's last packet it is taken as complete.
    public var gap: UInt64 {
        let longest = recentPauses.max() ?? 0
        return min(Self.longestGapNs, max(gapFloorNs, 3 * longest))
    }

    /// How long after a frame's last packet it is taken as complete, once its last slice has begun.
    private var shortGap: UInt64 {
        min(gap, max(Self.shortestGapNs, 3 * (recentFragmentPauses.max() ?? 0)))
    }

    /// The first macroblock of the slice that ends every recent frame (H.264), when the last 16
    /// frames agree and no packet came late: a frame is not whole before a slice begins there.
    var sliceLayout: Int? {
        guard layoutTrusted, recentLastSlices.count >= 16, let last = recentLastSlices.last, last >= 0,
              recentLastSlices.allSatisfy({ $0 == last }) else { return nil }
        return last
    }

    /// The sender fills every fragment but a NAL unit's last: a shorter packet ends its NAL unit.
    private var fragmentsFilled: Bool { fragments.full >= 32 && fragments.short == 0 }

    private mutating func handedOver() {
        recentPauses.append(longestPauseInFrame)
        if recentPauses.count > 32 { recentPauses.removeFirst() }
        recentFragmentPauses.append(longestFragmentPause)
        if recentFragmentPauses.count > 32 { recentFragmentPauses.removeFirst() }
        recentLastSlices.append(pendingSliceStarts.max() ?? -1)
        if recentLastSlices.count > 16 { recentLastSlices.removeFirst() }
        lastFrameArrival = (pendingFirstArrivalNs, lastArrivalNs)
        largestSeen = (max(largestSeen.bytes, pendingBytes), max(largestSeen.packets, pendingPackets))
        resetPending()
    }

    private mutating func resetPending() {
        pendingPackets = 0
        pendingBytes = 0
        pendingHasSlice = false
    }
}
