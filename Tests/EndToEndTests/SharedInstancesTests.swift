import CVHostTestSupport
import Foundation
import Testing

/// One plugin's instances serving every input of a run (`share`; by default for a plugin that
/// keeps no state between frames): one model loaded once, each result still naming its input and
/// frame, the inputs served in turn, the run's cores divided among its instances (the thread plan).
@Suite("one model for many inputs")
struct SharedInstancesTests {
    static let folder = TestFolders.make("shared")

    /// A clip of one colour, 320x240, `frames` frames at 10 a second.
    static func clip(_ colour: String, frames: Int = 30) throws -> String {
        let path = folder + "/\(colour).mp4"
        if !FileManager.default.fileExists(atPath: path) {
            let r = try Tool.run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "color=\(colour):size=320x240:rate=10", "-frames:v", "\(frames)",
                                            "-pix_fmt", "yuv420p", path])
            try #require(r.status == 0, "\(r.output)")
        }
        return path
    }

    /// Each result's source and its colour (the colour model's label), in the order written.
    static func colours(_ r: CommandResult) -> [(source: String, colour: String, seq: Int)] {
        r.events("result").compactMap { e in
            guard let source = e["source"] as? String, let data = e["data"] as? [String: Any], let label = data["label"] as? String,
                  let seq = e["seq"] as? Int else { return nil }
            return (source, label, seq)
        }
    }

    @Test("two inputs of different content through one detect instance: every result names its input and frame, as runs of each alone; said once (the thread plan, the model); share=false makes one each")
    func oneInstanceManyInputs() throws {
        let model = DetectPluginTests.model("colour")
        let red = try Self.clip("red"), blue = try Self.clip("blue")
        let labels = Self.folder + "/colours.txt"
        try "red\ngreen\nblue\n".write(toFile: labels, atomically: true, encoding: .utf8)
        let plugin = "detect:model=\(model),labels=\(labels)"
        let shared = try CVHostBinary.run(["run", "--plugin", plugin, "--input", "r=\(red)", "--input", "b=\(blue)", "--metrics-interval", "0"],
                                          timeout: 120, environment: DetectPluginTests.python)
        #expect(shared.exitCode == 0, "\(shared.stderr)")
        let got = Self.colours(shared)
        #expect(got.filter { $0.source == "r" }.map(\.seq) == Array(0..<30) && got.filter { $0.source == "b" }.map(\.seq) == Array(0..<30),
                "each input's 30 frames, in order: \(got.prefix(10))")
        #expect(Set(got.filter { $0.source == "r" }.map(\.colour)) == ["red"] && Set(got.filter { $0.source == "b" }.map(\.colour)) == ["blue"],
                "\(got.filter { ($0.source == "r") != ($0.colour == "red") }.prefix(5))")
        // The same as each alone.
        for (name, path, colour) in [("r", red, "red"), ("b", blue, "blue")] {
            let alone = try CVHostBinary.run(["run", "--plugin", plugin, "--input", "\(name)=\(path)", "--metrics-interval", "0"],
                                             timeout: 120, environment: DetectPluginTests.python)
            #expect(Self.colours(alone).map { "\($0.seq) \($0.colour)" } == got.filter { $0.source == name }.map { "\($0.seq) \($0.colour)" }, "\(colour)")
        }
        // Loaded once: one model line, one instance, the plan for it; both inputs' session.started say one instance.
        #expect(shared.stderr.components(separatedBy: "detect: colour.onnx").count == 2, "\(shared.stderr)")
        #expect(shared.stderr.contains("thread plan: ") && shared.stderr.contains("for 1 plugin instance (detect shared by the inputs)"), "\(shared.stderr)")
        let instances = shared.events("session.started").compactMap { (($0["plugins"] as? [[String: Any]])?.first?["instances"] as? Int) }
        #expect(instances == [1, 1])

        // share=false: a set per input, the cores divided between them.
        let apart = try CVHostBinary.run(["run", "--plugin", plugin + ",share=false", "--input", "r=\(red)", "--input", "b=\(blue)",
                                          "--metrics-interval", "0"], timeout: 120, environment: DetectPluginTests.python)
        #expect(apart.exitCode == 0, "\(apart.stderr)")
        #expect(apart.stderr.components(separatedBy: "detect: colour.onnx").count == 3, "\(apart.stderr)")
        #expect(apart.stderr.contains("for 2 plugin instances: detect"), "\(apart.stderr)")
        #expect(Self.colours(apart).map { "\($0.source) \($0.seq) \($0.colour)" }.sorted() == got.map { "\($0.source) \($0.seq) \($0.colour)" }.sorted())
    }

    @Test("the inputs take turns on a shared instance: a 5 fps camera beside a 60 fps one loses no frame to it; each input's metrics are its own")
    func fairTurns() throws {
        // One instance taking 40 ms a frame (25 a second): the fast input could fill it alone.
        let r = try CVHostBinary.run(["run", "--plugin", "null:delay_ms=40,results=1", "--input", "fast=testsrc:160x120@60",
                                      "--input", "slow=testsrc:160x120@5", "--duration", "4", "--metrics-interval", "0"], timeout: 60)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let finals = r.events("metrics").filter { $0["final"] as? Bool == true }
        func frames(_ source: String) -> [String: Any] {
            finals.first { $0["source"] as? String == source }?["frames"] as? [String: Any] ?? [:]
        }
        let slow = frames("slow"), fast = frames("fast")
        // A frame of the slow input waits at most for the call before it (40 ms), never for the fast one's queue.
        #expect((slow["processed"] as? Int ?? 0) >= 15 && (slow["dropped_total"] as? Int ?? -1) == 0, "slow: \(slow)")
        #expect((fast["processed"] as? Int ?? 0) > 0 && (fast["dropped_total"] as? Int ?? 0) > 0, "fast: \(fast)")
    }

    /// The threads of each plugin worker cvhost started (its children), read from /proc.
    static func workerThreads(of pid: Int32) -> [Int] {
        let fm = FileManager.default
        return ((try? fm.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry -> Int? in
            guard Int32(entry) != nil, let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 1, Int32(fields[1]) == pid else { return nil }
            return (try? fm.contentsOfDirectory(atPath: "/proc/\(entry)/task").count)
        }
    }

    @Test("the thread plan holds: the detect workers' threads (read from /proc) are the cores cvhost may use, shared or a set per input, never the cores times the inputs")
    func threadPlan() throws {
        let model = DetectPluginTests.model("colour")
        for share in ["true", "false"] {
            var threads: [Int] = []
            let r = try CVHostBinary.run(["run", "--plugin", "detect:model=\(model),share=\(share)", "--input", "a=testsrc:320x240@10",
                                          "--input", "b=testsrc:320x240@10", "--input", "c=testsrc:320x240@10", "--duration", "30",
                                          "--metrics-interval", "0"], timeout: 90, environment: DetectPluginTests.python, withStdin: false) { run in
                defer { kill(run.pid, SIGTERM) }
                // Each input has delivered results: every worker has made its onnxruntime session.
                guard run.wait(timeout: 60, until: { out in ["a", "b", "c"].allSatisfy { out.contains("\"source\":\"\($0)\",\"plugin\":\"detect\"") } })
                else { return }
                threads = Self.workerThreads(of: run.pid)
            }
            #expect(r.exitCode == 0, "\(r.stderr)")
            let plan = try #require(r.stderr.split(separator: "\n").first { $0.contains("thread plan: ") }, "\(r.stderr)")
            let cores = try #require(Int(plan.components(separatedBy: "thread plan: ")[1].prefix { $0.isNumber }))
            // A worker runs onnxruntime's threads (its own and its pool's) and one of its own (its
            // calls' reader): the inference threads are the rest.
            #expect(threads.count == (share == "true" ? 1 : 3), "share=\(share): workers' threads \(threads)")
            #expect(threads.map { $0 - 1 }.reduce(0, +) <= max(cores, threads.count), "share=\(share): \(threads) on \(cores) cores")
        }
    }
}
