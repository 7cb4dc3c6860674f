import CVHostCore
import CVHostOutput
import CVHostPlugins
import CVHostSources
import Foundation

/// `cvhost-bench`: what the host itself costs, measured with the null plugin.
///
///   swift build -c release && .build/release/cvhost-bench [--frames 3000] [--live-seconds 5]
///
/// 1. Overhead per frame per plugin: the unpaced test pattern (I420, 640x480 and 1920x1080) runs
///    with no plugin (the baseline: making frames), then with 1 and with 8 null plugins in block
///    mode, in cvhost's process and in worker processes (isolation=process), and the same in Python
///    (benchmarks/python/null.py, a worker process each: python3 from $CVHOST_PYTHON or the PATH); the extra CPU time
///    per frame (cvhost's and its workers'), divided by the plugins, is the host's cost of
///    delivering a frame to a plugin (queue hand-off, C frame, metrics, thread switches; isolated:
///    the copy into shared memory and the socket round trip). Starting and stopping the plugins
///    is measured apart and taken out. Best of 3 runs.
/// 2. Isolation: a live 640x480@60 test pattern feeds null:delay_ms=50 and null side by side
///    (drop-late); prints what share of frames each processed, and resident memory over the run.
///
/// `cvhost-bench --mjpeg FILE WIDTH HEIGHT` instead measures the camera path's MJPEG decoder
/// (MJPEGBenchmark; run by benchmarks/mjpeg_decode.py); `cvhost-bench --tracking BOXES FRAMES` the
/// analytics stage's time per frame (TrackingBenchmark; run by benchmarks/tracking.py); `cvhost-bench
/// --motion [FRAMES]` the host's motion detector's time per frame (MotionBenchmark).
@main
struct HostBenchmark {
    static func main() throws {
        // isolation=process runs plugins in this executable, started again as a worker.
        if let status = PluginWorker.runIfRequested() { exit(status) }
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
            case "--tracking":
                guard let boxes = args.popFirst().flatMap({ Int($0) }), let n = args.popFirst().flatMap({ Int($0) }), boxes > 0, n > 0 else {
                    print("usage: cvhost-bench --tracking BOXES FRAMES")
                    return
                }
                return TrackingBenchmark.run(boxes: boxes, frames: n)
            case "--motion":
                return MotionBenchmark.run(frames: args.popFirst().flatMap { Int($0) } ?? 1000)
            default:
                print("usage: cvhost-bench [--frames N] [--live-seconds S] | --mjpeg FILE WIDTH HEIGHT | --tracking BOXES FRAMES | --motion [FRAMES]")
                return
            }
        }
        Log.level = .warning
        let loader = PluginLoader()
        let null = try loader.find("null", isPath: false)
        let writer = JSONLineWriter(fileDescriptor: open("/dev/null", O_WRONLY))

        print("host overhead per frame per plugin, unpaced testsrc I420, null plugins in block mode, best of 3 (CPU us, cvhost and its workers)")
        print("  plugins  isolation   640x480 (\(frames) frames)   1920x1080 (\(frames / 4) frames)")
        let sizes = [(640, 480, frames), (1920, 1080, frames / 4)]
        var base: [Double] = []
        for (w, h, n) in sizes {
            base.append(try (0..<3).map { _ in try cpuPerFrame(plugins: 0, frames: n, width: w, height: h, isolation: .none, plugin: null, writer: writer) }.min()!)
        }
        print(String(format: "  none     -           %7.2f (making frames)    %7.2f (making frames)", base[0] * 1e6, base[1] * 1e6))
        // The same null plugin in Python (benchmarks/python/null.py): always in worker processes.
        let pythonNull = try loader.find(packageRoot + "/benchmarks/python/null.py", isPath: true)
        for (label, isolation, plugin) in PluginIsolation.allCases.map({ ($0.rawValue, $0, null) }) + [("python", .process, pythonNull)] {
            for plugins in [1, 8] {
                var cells: [String] = []
                for (k, (w, h, n)) in sizes.enumerated() {
                    let best = try (0..<3).map { _ in
                        try cpuPerFrame(plugins: plugins, frames: n, width: w, height: h, isolation: isolation, plugin: plugin, writer: writer)
                    }.min()!
                    cells.append(String(format: "%7.2f", (best - base[k]) / Double(plugins) * 1e6))
                }
                print("  \(plugins)        \(label.padding(toLength: 10, withPad: " ", startingAt: 0))  \(cells[0])                  \(cells[1])")
            }
        }

        print("\nisolation, live testsrc 640x480@60, \(formatted(liveSeconds)) s, drop-late, queue depth 2")
        try isolation(seconds: liveSeconds, plugin: null, writer: writer)
    }

    static func formatted(_ v: Double) -> String { String(format: "%g", v) }

    /// The package's folder (this file is benchmarks/cvhost-bench/HostBenchmark.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// CPU seconds (this process and its workers) per frame for a run with `plugins` null plugins,
    /// without what starting and stopping them costs.
    static func cpuPerFrame(plugins: Int, frames: Int, width: Int, height: Int, isolation: PluginIsolation, plugin: PluginInfo,
                            writer: JSONLineWriter) throws -> Double {
        func runners() throws -> [PluginRunner] {
            try (0..<plugins).map { i in
                try PluginRunner(plugin: plugin, source: "testsrc", index: i, options: [], queueDepth: 2, backpressure: .block,
                                 isolation: isolation, sink: writer)
            }
        }
        // Starting and stopping alone (a worker's exec and load): measured to be taken out.
        var before = cpuSeconds()
        try runners().forEach { $0.shutdown() }
        let startStop = cpuSeconds() - before

        let session = CaptureSession()
        try session.addInput(CaptureDeviceInput(device: TestPatternDevice(width: width, height: height, frameRate: 1000, paced: false)))
        let made = try runners()
        for r in made { try session.addOutput(r.output) }
        session.frameLimit = UInt64(frames)
        before = cpuSeconds()
        try session.startRunning()
        session.waitUntilStopped()
        made.forEach { $0.shutdown() }
        return (cpuSeconds() - before - startStop) / Double(frames)
    }

    static func isolation(seconds: Double, plugin: PluginInfo, writer: JSONLineWriter) throws {
        let session = CaptureSession()
        try session.addInput(CaptureDeviceInput(device: TestPatternDevice(width: 640, height: 480, frameRate: 60, paced: true)))
        let slow = try PluginRunner(plugin: plugin, source: "testsrc", index: 0, options: [(key: "delay_ms", value: "50")], queueDepth: 2,
                                    backpressure: nil, sink: writer)
        let fast = try PluginRunner(plugin: plugin, source: "testsrc", index: 1, options: [], queueDepth: 2, backpressure: nil, sink: writer)
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

    /// CPU time of this process and of its ended (reaped) children: the workers.
    static func cpuSeconds() -> Double {
        func seconds(_ who: Int32) -> Double {
            var usage = rusage()
            getrusage(who, &usage)
            return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
                + Double(usage.ru_stime.tv_usec) / 1e6
        }
        return seconds(RUSAGE_SELF.rawValue) + seconds(RUSAGE_CHILDREN.rawValue)
    }

    static func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }
}
