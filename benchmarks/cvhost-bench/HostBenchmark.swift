import CVHostCore
import CVHostPlugins
import CVHostSources
import Foundation

/// `cvhost-bench`: what the host itself costs, measured with the null plugin.
///
///   swift build -c release && .build/release/cvhost-bench [--frames 3000] [--live-seconds 5]
///
/// 1. Overhead per frame per plugin: the unpaced test pattern (640x480 I420) runs with no
///    plugin (the baseline: making frames), then with 1 and with 8 null plugins in block mode;
///    the extra CPU time per frame, divided by the plugins, is the host's cost of delivering a
///    frame to a plugin (queue hand-off, C frame, metrics, thread switches). Best of 3 runs.
/// 2. Isolation: a live 640x480@60 test pattern feeds null:delay_ms=50 and null side by side
///    (drop-late); prints what share of frames each processed, and resident memory over the run.
///
/// `cvhost-bench --mjpeg FILE WIDTH HEIGHT` instead measures the camera path's MJPEG decoder
/// (MJPEGBenchmark; run by benchmarks/mjpeg_decode.py).
@main
struct HostBenchmark {
    static func main() throws {
        var frames = 3000
        var liveSeconds = 5.0
        var args = CommandLine.arguments.dropFirst()
        while let a = args.popFirst() {
            switch a {
            case "--frames": frames = Int(args.popFirst() ?? "") ?? frames
            case "--live-seconds": liveSeconds = Double(args.popFirst() ?? "") ?? liveSeconds
            case "--mjpeg":
                guard let file = args.popFirst(), let w = args.popFirst().flatMap({ Int($0) }), let h = args.popFirst().flatMap({ Int($0) })
                else {
                    print("usage: cvhost-bench --mjpeg FILE WIDTH HEIGHT")
                    return
                }
                return try MJPEGBenchmark.run(file: file, width: w, height: h)
            default:
                print("usage: cvhost-bench [--frames N] [--live-seconds S] | --mjpeg FILE WIDTH HEIGHT")
                return
            }
        }
        Log.level = .warning
        let loader = PluginLoader()
        let null = try loader.find("null", isPath: false)
        let writer = JSONLineWriter(fileDescriptor: open("/dev/null", O_WRONLY))

        print("host overhead, unpaced testsrc 640x480 I420, \(frames) frames, best of 3 (CPU time)")
        func best(_ plugins: Int) throws -> Double {
            try (0..<3).map { _ in try cpuPerFrame(plugins: plugins, frames: frames, plugin: null, writer: writer) }.min()!
        }
        let base = try best(0)
        let one = try best(1)
        let eight = try best(8)
        print(String(format: "  no plugin (making frames)   %7.2f us/frame", base * 1e6))
        print(String(format: "  1 null plugin               %7.2f us/frame  -> host overhead %6.2f us per frame per plugin", one * 1e6,
                     (one - base) * 1e6))
        print(String(format: "  8 null plugins              %7.2f us/frame  -> host overhead %6.2f us per frame per plugin", eight * 1e6,
                     (eight - base) / 8 * 1e6))

        print("\nisolation, live testsrc 640x480@60, \(formatted(liveSeconds)) s, drop-late, queue depth 2")
        try isolation(seconds: liveSeconds, plugin: null, writer: writer)
    }

    static func formatted(_ v: Double) -> String { String(format: "%g", v) }

    /// CPU seconds of this process per frame for a run with `plugins` null plugins.
    static func cpuPerFrame(plugins: Int, frames: Int, plugin: PluginInfo, writer: JSONLineWriter) throws -> Double {
        let session = CaptureSession()
        try session.addInput(CaptureDeviceInput(device: TestPatternDevice(width: 640, height: 480, frameRate: 1000, paced: false)))
        let runners = try (0..<plugins).map { i in
            try PluginRunner(plugin: plugin, source: "testsrc", index: i, options: [], queueDepth: 2, backpressure: .block, writer: writer)
        }
        for r in runners { try session.addOutput(r.output) }
        session.frameLimit = UInt64(frames)
        let before = cpuSeconds()
        try session.startRunning()
        session.waitUntilStopped()
        let used = cpuSeconds() - before
        runners.forEach { $0.shutdown() }
        return used / Double(frames)
    }

    static func isolation(seconds: Double, plugin: PluginInfo, writer: JSONLineWriter) throws {
        let session = CaptureSession()
        try session.addInput(CaptureDeviceInput(device: TestPatternDevice(width: 640, height: 480, frameRate: 60, paced: true)))
        let slow = try PluginRunner(plugin: plugin, source: "testsrc", index: 0, options: [(key: "delay_ms", value: "50")], queueDepth: 2,
                                    backpressure: nil, writer: writer)
        let fast = try PluginRunner(plugin: plugin, source: "testsrc", index: 1, options: [], queueDepth: 2, backpressure: nil, writer: writer)
        try session.addOutput(slow.output)
        try session.addOutput(fast.output)
        try session.startRunning()
        var rss: [Int] = []
        let start = Date()
        while Date().timeIntervalSince(start) < seconds {
            Thread.sleep(forTimeInterval: min(1, seconds / 5))
            rss.append(residentKiB())
        }
        session.stopRunning()
        for (name, r) in [("null:delay_ms=50", slow), ("null", fast)] {
            let s = r.output.statistics
            let processed = s.delivered
            let label = name.padding(toLength: 18, withPad: " ", startingAt: 0)
            print("  \(label)" + String(format: " offered %5llu  processed %5llu (%5.1f%%, %5.1f/s)  dropped late %5llu", s.offered,
                                         processed, Double(processed) / Double(max(1, s.offered)) * 100, Double(processed) / seconds,
                                         s.dropped[.late] ?? 0))
        }
        print("  resident memory, KiB, sampled during the run: " + rss.map(String.init).joined(separator: " "))
        slow.shutdown()
        fast.shutdown()
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }

    static func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }
}
