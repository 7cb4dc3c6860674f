import CVHostAnalytics
import Foundation

/// `cvhost-bench --tracking BOXES FRAMES`: the analytics stage's time per frame with BOXES objects
/// in every frame (a grid of boxes, each moving its own way, jittered a pixel or two), followed
/// and watched by one zone and one line: the figure benchmarks/tracking.py sets beside
/// supervision's ByteTrack. On this thread, after 30 frames to warm up; prints ms per frame.
enum TrackingBenchmark {
    static func run(boxes: Int, frames: Int) {
        var zone = ZoneSettings(name: "z", polygon: Polygon([Point(200, 200), Point(1000, 200), Point(1000, 600), Point(200, 600)]))
        zone.dwell = 5
        let analytics = BoxAnalytics(tracker: TrackerSettings(), zones: [zone],
                                     lines: [LineSettings(name: "l", segment: Segment(Point(640, 0), Point(640, 720)))])
        var seed: UInt64 = 1
        func unit() -> Double {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Double(seed >> 11) / Double(1 << 53)
        }
        let side = Int(Double(boxes).squareRoot().rounded(.up))
        let start = (0..<boxes).map { i in (x: 40 + Double(i % side) * 1200 / Double(side), y: 40 + Double(i / side) * 640 / Double(side)) }
        let velocity = (0..<boxes).map { _ in (x: unit() * 4 - 2, y: unit() * 4 - 2) }
        func detections(_ n: Int) -> [Detection] {
            (0..<boxes).map { i in
                Detection(box: Box(x: start[i].x + velocity[i].x * Double(n) + unit() * 2, y: start[i].y + velocity[i].y * Double(n) + unit() * 2,
                                   width: 30, height: 60), label: "person", confidence: 0.6 + unit() * 0.4)
            }
        }
        let made = (0..<(frames + 30)).map(detections)
        for n in 0..<30 { _ = analytics.update(made[n], time: Double(n) / 30, width: 1280, height: 720) }
        let begin = DispatchTime.now().uptimeNanoseconds
        for n in 30..<(frames + 30) { _ = analytics.update(made[n], time: Double(n) / 30, width: 1280, height: 720) }
        let ms = Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e6 / Double(frames)
        print(String(format: "%d boxes: %.4f ms per frame (%d frames)", boxes, ms, frames))
    }
}
