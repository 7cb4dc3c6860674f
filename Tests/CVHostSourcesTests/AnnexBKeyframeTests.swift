import Testing
@testable import CVHostSources

/// An RTSP camera's frames, unflagged by FFmpeg's depacketizer: which a clip can start at.
@Suite("Keyframes in Annex B access units")
struct AnnexBKeyframeTests {
    static func key(_ bytes: [UInt8], hevc: Bool = false) -> Bool {
        bytes.withUnsafeBytes { AnnexBKeyframes.isKeyframe($0, hevc: hevc) }
    }

    @Test("H.264: an IDR slice after its parameter sets is a keyframe (3- or 4-byte start codes); a P slice, or an IDR type byte inside a NAL's payload, is not")
    func h264() {
        #expect(Self.key([0, 0, 0, 1, 0x67, 0x42, 0, 0, 1, 0x68, 0xCE, 0, 0, 1, 0x65, 0x88, 0x84]))
        #expect(Self.key([0, 0, 1, 0x65, 0x88]))
        #expect(!Self.key([0, 0, 0, 1, 0x41, 0x9A, 0x05, 0x65]))
        #expect(!Self.key([0x65, 0, 0, 1]))
        #expect(!Self.key([]))
    }

    @Test("H.265: IDR and CRA (IRAP, types 16 to 21) are keyframes; a trailing picture is not")
    func hevc() {
        #expect(Self.key([0, 0, 0, 1, 0x40, 0x01, 0, 0, 1, 0x26, 0x01], hevc: true))  // VPS, then IDR_W_RADL (19)
        #expect(Self.key([0, 0, 1, 0x2A, 0x01], hevc: true))  // CRA (21)
        #expect(!Self.key([0, 0, 1, 0x02, 0x01], hevc: true))  // TRAIL_R (1)
    }
}
