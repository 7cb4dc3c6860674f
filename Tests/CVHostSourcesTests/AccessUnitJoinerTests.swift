import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostSources

/// The decisions that join an RTSP camera's packets into frames as they arrive, fed packets and
/// arrival times of the test's choosing: the gap learned from the stream, the slice layout learned
/// from the last frames, a late packet, a frame without end, and the slice headers of a real encoder.
@Suite("RTSP frames joined as they arrive")
struct AccessUnitJoinerTests {
    static let ms: UInt64 = 1_000_000

    /// An H.264 packet as FFmpeg's depacketizer gives it: a slice (with its first macroblock), a
    /// parameter set, or a fragment that continues a NAL unit.
    enum Kind { case slice(firstMB: Int), parameterSet, continuation }

    /// The bits of `first_mb_in_slice` (exp-Golomb), after a slice type of 0 and padding.
    static func sliceHeader(_ mb: Int) -> [UInt8] {
        let code = UInt64(mb + 1)
        let width = 64 - code.leadingZeroBitCount
        var bits = String(repeating: "0", count: width - 1) + String(code, radix: 2) + "1"  // then slice_type 0
        bits += String(repeating: "0", count: (8 - bits.count % 8) % 8 + 64)
        return stride(from: 0, to: 64, by: 8).map { UInt8(bits.dropFirst($0).prefix(8), radix: 2)! }
    }

    static func packet(_ kind: Kind, pts: Int64, at ns: UInt64, size: Int = 1000) -> AccessUnitJoiner.Packet {
        var head: [UInt8]
        switch kind {
        case .slice(let mb): head = [0, 0, 0, 1, 0x41] + sliceHeader(mb)
        case .parameterSet: head = [0, 0, 0, 1, 0x67, 0x42, 0, 0x1e, 0, 0, 0, 0, 0]
        case .continuation: head = [0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55]
        }
        return head.withUnsafeBytes { AccessUnitJoiner.Packet(pts: pts, size: size, arrivalNs: ns, head: UnsafeRawBufferPointer(rebasing: $0.prefix(13)), hevc: false) }
    }

    /// Frames at 30 fps from 0, each of `slices` slices (first macroblocks), each slice a packet of
    /// `sizes` bytes, `pause` apart; every frame handed over by the next one's first packet.
    static func feed(_ j: inout AccessUnitJoiner, frames: Range<Int>, slices: [Int] = [0], pause: UInt64 = ms / 5) {
        for f in frames {
            let start = UInt64(f) * 33 * ms
            for (k, mb) in slices.enumerated() {
                let p = packet(.slice(firstMB: mb), pts: Int64(f), at: start + UInt64(k) * pause, size: k == slices.count - 1 ? 700 : 1000)
                if j.offer(p) == .handOver { #expect(j.offer(p) == .joined) }
            }
        }
    }

    @Test("first_mb_in_slice read from the slices of a real encoder (x264, 4 slices a frame)")
    func firstMacroblocks() throws {
        let clip = try MediaFixtures.make("slices.h264", ["-f", "lavfi", "-i", "testsrc2=size=160x128:rate=25", "-frames:v", "3", "-c:v", "libx264",
                                                         "-x264-params", "slices=4", "-pix_fmt", "yuv420p", "-f", "h264"])
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: clip)))
        var starts: [Int] = []
        var i = 0
        while i + 4 < data.count {
            if data[i] == 0, data[i + 1] == 0, data[i + 2] == 1, (1...5).contains(data[i + 3] & 0x1F) {
                let head = [0, 0, 0, 1] + data[(i + 3)..<min(data.count, i + 12)]
                let p = head.withUnsafeBytes { AccessUnitJoiner.Packet(pts: 0, size: 1000, arrivalNs: 0, head: $0, hevc: false) }
                #expect(p.startsSlice)
                starts.append(p.firstMacroblock ?? -1)
            }
            i += 1
        }
        // 160x128 is 10x8 macroblocks: four slices of two rows each, in every frame.
        #expect(starts == [0, 20, 40, 60, 0, 20, 40, 60, 0, 20, 40, 60], "\(starts)")
    }

    @Test("the gap follows the stream: 2 ms for a burst, three times the longest pause inside a frame, at most 15 ms")
    func gapLearned() {
        var j = AccessUnitJoiner()
        Self.feed(&j, frames: 0..<4, slices: [0, 40])
        #expect(j.gap == AccessUnitJoiner.shortestGapNs)
        // The last packet (700 bytes, not as full as the 1000 before it) may end the frame: the gap after it.
        #expect(j.deadline == 3 * 33 * Self.ms + Self.ms / 5 + AccessUnitJoiner.shortestGapNs)
        Self.feed(&j, frames: 4..<6, slices: [0, 40], pause: 4 * Self.ms)
        #expect(j.gap == 12 * Self.ms)
        Self.feed(&j, frames: 6..<8, slices: [0, 40], pause: 9 * Self.ms)
        #expect(j.gap == AccessUnitJoiner.longestGapNs)
    }

    @Test("no frame ends by the gap before its first slice, nor on a packet as full as the fullest fragment")
    func noEarlyEnd() {
        var j = AccessUnitJoiner()
        Self.feed(&j, frames: 0..<3)
        #expect(j.offer(Self.packet(.parameterSet, pts: 3, at: 99 * Self.ms)) == .handOver)
        #expect(j.offer(Self.packet(.parameterSet, pts: 3, at: 99 * Self.ms)) == .joined)
        #expect(j.deadline == nil)  // parameter sets alone
        #expect(j.offer(Self.packet(.slice(firstMB: 0), pts: 3, at: 100 * Self.ms, size: 1400)) == .joined)
        #expect(j.deadline == nil)  // as full as the fullest: a fragment with more to come
        #expect(j.offer(Self.packet(.continuation, pts: 3, at: 100 * Self.ms + 100_000, size: 300)) == .joined)
        #expect(j.deadline != nil)
    }

    @Test("a packet of a frame the gap handed over is late: dropped, counted, the gap doubled from then on")
    func latePacket() {
        var j = AccessUnitJoiner()
        Self.feed(&j, frames: 0..<3)
        let gap = j.gap
        j.gapElapsed()
        #expect(j.offer(Self.packet(.continuation, pts: 2, at: 80 * Self.ms)) == .late)
        #expect(j.latePackets == 1 && j.gap == 2 * gap)
        #expect(j.offer(Self.packet(.slice(firstMB: 0), pts: 3, at: 99 * Self.ms)) == .joined)
    }

    @Test("a camera that cuts every frame into the same slices: after 16 frames no frame is whole before its last slice begins; a late packet turns that off")
    func sliceLayout() {
        var j = AccessUnitJoiner()
        Self.feed(&j, frames: 0..<17, slices: [0, 40])
        #expect(j.sliceLayout == 40)
        #expect(j.offer(Self.packet(.slice(firstMB: 0), pts: 17, at: 17 * 33 * Self.ms, size: 700)) == .handOver)
        #expect(j.offer(Self.packet(.slice(firstMB: 0), pts: 17, at: 17 * 33 * Self.ms, size: 700)) == .joined)
        #expect(j.deadline == nil)  // the slice at 40 has not begun
        #expect(j.offer(Self.packet(.slice(firstMB: 40), pts: 17, at: 17 * 33 * Self.ms + 5 * Self.ms, size: 700)) == .joined)
        #expect(j.deadline != nil)
        j.gapElapsed()
        _ = j.offer(Self.packet(.continuation, pts: 17, at: 17 * 33 * Self.ms + 9 * Self.ms))
        #expect(j.sliceLayout == nil)
    }

    @Test("a frame that never ends is dropped past its caps, the rest of its packets too; the next timestamp is joined")
    func frameWithoutEnd() {
        var j = AccessUnitJoiner()
        Self.feed(&j, frames: 0..<2)
        var decisions: [AccessUnitJoiner.Decision: Int] = [:]
        for k in 0..<10_000 {
            var d = j.offer(Self.packet(k == 0 ? .slice(firstMB: 0) : .continuation, pts: 2, at: 70 * Self.ms + UInt64(k) * 1000, size: 1400))
            if d == .handOver { d = j.offer(Self.packet(.slice(firstMB: 0), pts: 2, at: 70 * Self.ms, size: 1400)) }
            decisions[d, default: 0] += 1
            #expect(j.pendingPackets <= j.framePacketLimit && j.pendingBytes <= j.frameByteLimit)
        }
        #expect(decisions[.oversized] == 1 && j.oversizedFrames == 1 && decisions[.discarded]! > 5000, "\(decisions)")
        #expect(j.offer(Self.packet(.slice(firstMB: 0), pts: 3, at: 200 * Self.ms)) == .joined)
    }
}
