import Testing
@testable import CVHostRun

/// The watch of a tracked plugin's detections against what it asked for, fed frames as a
/// 30 fps input hands them over (sequence numbers, media seconds, frames its cap passed over).
@Suite("DetectionRateWatch")
struct DetectionRateWatchTests {
    /// Feeds `seconds` of a 30 fps input of which the plugin processes every `every`-th frame
    /// (its cap passing over `capped` of the frames in between; the rest dropped as late).
    /// - Returns: the shortfall said, and at which second.
    static func feed(seconds: Double, every: Int, capped: Int, fps: Double = 30) -> (DetectionRateWatch.Shortfall, Double)? {
        var watch = DetectionRateWatch(mostPassedOver: 256)
        var sequence: UInt64 = 0
        while Double(sequence) / fps < seconds {
            let time = Double(sequence) / fps
            if let short = watch.processed(sequence: sequence, time: time, passedOver: sequence == 0 ? 0 : capped) { return (short, time) }
            sequence += UInt64(every)
        }
        return nil
    }

    @Test("a plugin that keeps up is never said: every frame (block), or every sixth with the five between passed over by max_fps=5")
    func keepsUp() {
        #expect(Self.feed(seconds: 60, every: 1, capped: 0) == nil)
        #expect(Self.feed(seconds: 60, every: 6, capped: 5) == nil)
    }

    @Test("max_fps=5 on 30 fps, a plugin that takes 2.1 a second: said once, after the warm-up and a window, with what it got and asked")
    func fallsBehind() throws {
        // Every 14th frame processed (2.14 a second); of the 13 between, the cap passed over 10.9 (5 a second asked), the rest late.
        let (short, at) = try #require(Self.feed(seconds: 60, every: 14, capped: 11))
        #expect(at >= DetectionRateWatch.warmUp + DetectionRateWatch.window && at < DetectionRateWatch.warmUp + DetectionRateWatch.window + 1)
        #expect(abs(short.got - 30.0 / 14) < 0.1 && abs(short.asked - 30.0 * 3 / 14) < 0.1, "\(short)")
        // No cap at all, a plugin at 4 of 30 a second: every frame it did not see was late.
        let (all, _) = try #require(Self.feed(seconds: 30, every: 7, capped: 0))
        #expect(abs(all.got - 30.0 / 7) < 0.1 && abs(all.asked - 30) < 0.5, "\(all)")
    }

    @Test("not judged: a window with more frames between than are carried (max_fps=0.1), or the input started again (its sequence back)")
    func notJudged() {
        #expect(Self.feed(seconds: 120, every: 300, capped: 256) == nil)
        var watch = DetectionRateWatch(mostPassedOver: 256)
        // A plugin behind, then the input starts again at sequence 0: the window begins anew, nothing said from the restart's step.
        var said: [Double] = []
        for (sequence, time) in [(UInt64(0), 0.0), (150, 5.0), (450, 12.0), (0, 12.1), (30, 13.0)] {
            if watch.processed(sequence: sequence, time: time, passedOver: 0) != nil { said.append(time) }
        }
        #expect(said.isEmpty)
    }
}
