import Testing
@testable import CVHostSources

/// When a decoder may skip the frames no other frame depends on: consumers taking at most half the
/// stream's rate, and the frames left coming at least twice as often as they take them.
@Suite("Frame skipping: the rules")
struct FrameSkippingTests {
    @Test("skips while every consumer takes at most half the stream's rate; not for one taking every frame, nor for a stream of no stated rate")
    func when() {
        var s = FrameSkipping(streamFrameRate: 30)
        #expect(!s.skips)
        s.need(5)
        #expect(s.skips)
        s.need(15)
        #expect(s.skips)
        s.need(20)
        #expect(!s.skips)
        s.need(0)
        #expect(!s.skips)
        var unknown = FrameSkipping(streamFrameRate: 0)
        unknown.need(5)
        #expect(!unknown.skips)
    }

    @Test("frames left two apart (a B-pyramid) keep it on for 5 a second of 30; four apart (three B-frames, no pyramid) end it for good")
    func gaps() {
        let frame: Int64 = 33_333_333
        var pyramid = FrameSkipping(streamFrameRate: 30)
        pyramid.need(5)
        let kept = stride(from: 0, to: 90, by: 2).map { pyramid.kept(ptsNs: Int64($0) * frame) }
        #expect(kept.allSatisfy { $0 })
        #expect(pyramid.skips)
        var flat = FrameSkipping(streamFrameRate: 30)
        flat.need(5)
        let first = flat.kept(ptsNs: 0), second = flat.kept(ptsNs: 4 * frame)
        #expect(first && !second)
        #expect(!flat.skips && flat.refused)
        flat.need(5)
        #expect(!flat.skips, "refused for good")
        // A file played again from its start (pts back to 0) is not a gap.
        var again = FrameSkipping(streamFrameRate: 30)
        again.need(5)
        let late = again.kept(ptsNs: 88 * frame), start = again.kept(ptsNs: 0)
        #expect(late && start && again.skips)
    }

    @Test("keyframes alone: when they come at least twice as often as the fastest consumer takes frames and none looks at every frame; not before two are read; ended for good by keyframes that come farther apart")
    func keyframes() {
        var s = FrameSkipping(streamFrameRate: 30)
        s.need(1, keyframesWillDo: true)
        #expect(!s.keyframesOnly, "no keyframe interval yet")
        s.read(keyframe: true, ptsNs: 0)
        s.read(keyframe: false, ptsNs: 33_333_333)
        s.read(keyframe: true, ptsNs: 333_333_333)
        #expect(abs((s.keyframeInterval ?? 0) - 1.0 / 3) < 1e-6 && s.keyframesOnly)
        s.need(2, keyframesWillDo: true)
        #expect(!s.keyframesOnly, "keyframes every 1/3 s are not twice as often as 2 a second")
        s.need(1, keyframesWillDo: false)
        #expect(!s.keyframesOnly, "a consumer looks at every frame (the host's motion)")
        s.need(1, keyframesWillDo: true)
        // Keyframes 1/3 s apart kept; then one 2 s later (a camera stretching its interval): ended for good.
        #expect(s.kept(ptsNs: 333_333_333) && s.kept(ptsNs: 666_666_666))
        #expect(!s.kept(ptsNs: 2_666_666_666) && s.keyframesRefused && !s.keyframesOnly)
        s.need(1, keyframesWillDo: true)
        #expect(!s.keyframesOnly && s.skips, "refused for good; frames no other depends on are still skipped")
    }
}
