import CVHostMotion
import Foundation

/// `cvhost-bench --motion FRAMES`: the host's motion detector's time per frame, on a made luma
/// plane of 640x360 (a sub-stream), 1280x720 and 1920x1080, still and with a square moving across
/// it: the detector's cost beside a detector model's (benchmarks/cameras.py). On this thread,
/// after 10 frames to warm up; prints microseconds per frame (median and the slowest 1%).
enum MotionBenchmark {
    static func run(frames: Int) {
        print("motion detector, microseconds a frame (median, p99), \(frames) frames each, small picture 120 rows")
        for (width, height) in [(640, 360), (1280, 720), (1920, 1080)] {
            for moving in [false, true] {
                var seed: UInt64 = 7
                var plane = [UInt8](repeating: 0, count: width * height)
                for i in plane.indices {
                    seed = seed &* 6364136223846793005 &+ 1442695040888963407
                    plane[i] = UInt8(90 + (i % width / 16 + i / width / 24) % 3 * 25) &+ UInt8(seed >> 61)
                }
                let base = plane
                let detector = MotionDetector()
                var times: [Double] = []
                for n in 0..<(frames + 10) {
                    if moving {
                        plane = base
                        let x0 = (n * 8) % (width - 80), y0 = height / 3
                        for y in y0..<(y0 + 80) { for x in x0..<(x0 + 80) { plane[y * width + x] = 250 } }
                    }
                    let start = DispatchTime.now().uptimeNanoseconds
                    _ = plane.withUnsafeBufferPointer { detector.detect(luma: $0.baseAddress!, width: width, height: height, stride: width) }
                    if n >= 10 { times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000) }
                }
                times.sort()
                let median = times[times.count / 2], p99 = times[min(times.count - 1, times.count * 99 / 100)]
                print(String(format: "  %4dx%-4d %@: %7.1f us median, %7.1f us p99", width, height, moving ? "moving" : "still ", median, p99))
            }
        }
    }
}
