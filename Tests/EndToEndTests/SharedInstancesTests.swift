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

    @Test("two inputs of different content through one set of detect instances (an instance per core, at most one per input; instances=1 one): every result names its input and frame, as runs of each alone; said once (the thread plan, the model); share=false makes a set each")
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
        // Loaded once for the run: one model line, an instance per core (at most one per input), the plan for
        // them; both inputs' session.started say as many.
        let plan = try #require(shared.stderr.split(separator: "\n").first { $0.contains("thread plan: ") }, "\(shared.stderr)")
        let cores = try #require(Int(plan.components(separatedBy: "thread plan: ")[1].prefix { $0.isNumber }))
        let n = min(cores, 2)
        #expect(shared.stderr.components(separatedBy: "detect: colour.onnx").count == 2, "\(shared.stderr)")
        #expect(plan.contains("for \(n) plugin instance\(n == 1 ? "" : "s") (detect shared by the inputs)"), "\(plan)")
        let instances = shared.events("session.started").compactMap { (($0["plugins"] as? [[String: Any]])?.first?["instances"] as? Int) }
        #expect(instances == [n, n])
        // instances= given is kept: one.
        let one = try CVHostBinary.run(["run", "--plugin", plugin + ",instances=1", "--input", "r=\(red)", "--input", "b=\(blue)",
                                        "--metrics-interval", "0"], timeout: 120, environment: DetectPluginTests.python)
        #expect(one.stderr.contains("for 1 plugin instance (detect shared by the inputs)"), "\(one.stderr)")
        #expect(Self.colours(one).map { "\($0.source) \($0.seq) \($0.colour)" }.sorted() == got.map { "\($0.source) \($0.seq) \($0.colour)" }.sorted())

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

    /// The shared instances' calls and the frames they carried (the worker's batch_calls, batch_frames), at the end.
    static func batches(_ r: CommandResult) -> (calls: Int, frames: Int) {
        let worker = r.events("metrics").filter { $0["final"] as? Bool == true }.compactMap { $0["worker"] as? [String: Any] }
        return (worker.compactMap { $0["batch_calls"] as? Int }.max() ?? 0, worker.compactMap { $0["batch_frames"] as? Int }.max() ?? 0)
    }

    @Test("a batch of frames of three inputs through NudeNet's YOLOv8n (its batch left open) gives what the same frames give one by one: labels, scores within 1e-4, boxes within 0.01 px (onnxruntime, and OpenVINO at f32)",
          arguments: ["runtime=onnxruntime", "runtime=openvino,precision=f32"])
    func batchEqualsOneByOne(runtime: String) throws {
        try #require(FileManager.default.fileExists(atPath: DetectPluginTests.realModel), "no \(DetectPluginTests.realModel): run scripts/install-deps.sh --tests")
        try #require(Corpus.isPresent, "../shared/corpus is missing")
        let photos = Corpus.path("faces/images/640x480")
        // The corpus's seven photos of people, split among three inputs.
        let inputs = ["a=\(photos)/face_640x480_[a-b]*.jpg", "b=\(photos)/face_640x480_[c-l]*.jpg", "c=\(photos)/face_640x480_m*.jpg"]
        func run(_ options: String) throws -> (CommandResult, [String: [(label: String, confidence: Double, box: [Double])]]) {
            let r = try CVHostBinary.run(["run", "--plugin", "detect:model=\(DetectPluginTests.realModel),confidence=0.05,\(runtime)," + options]
                                         + inputs.flatMap { ["--input", $0] } + ["--metrics-interval", "0"], timeout: 120,
                                         environment: DetectPluginTests.python)
            #expect(r.exitCode == 0, "\(options): \(r.stderr)")
            var found: [String: [(label: String, confidence: Double, box: [Double])]] = [:]
            for e in r.events("result") {
                guard let source = e["source"] as? String, let image = e["image"] as? String, let d = e["data"] as? [String: Any],
                      let b = d["bounds"] as? [String: Double] else { continue }
                found[source + " " + (image as NSString).lastPathComponent, default: []]
                    .append((d["label"] as? String ?? "", d["confidence"] as? Double ?? -1, [b["x"]!, b["y"]!, b["width"]!, b["height"]!]))
            }
            return (r, found.mapValues { $0.sorted { ($0.label, $0.confidence) < ($1.label, $1.confidence) } })
        }
        // Every frame waits up to 200 ms for the others: the inputs' first frames go in one call.
        let (batched, together) = try run("batch=4,batch_wait_ms=200")
        let (single, alone) = try run("batch=1")
        let (calls, frames) = Self.batches(batched)
        #expect(frames == 7 && calls < frames, "batched: \(calls) calls for \(frames) frames")
        #expect(Self.batches(single) == (7, 7))
        #expect(together.count == 7 && Set(together.keys) == Set(alone.keys), "\(together.keys.sorted()) \(alone.keys.sorted())")
        #expect(together.values.map(\.count).reduce(0, +) >= 14, "objects: \(together.values.map(\.count))")
        for (key, objects) in alone {
            let other = together[key] ?? []
            #expect(other.count == objects.count && zip(other, objects).allSatisfy { x, y in
                x.label == y.label && abs(x.confidence - y.confidence) <= 1e-4 + 1e-9 && zip(x.box, y.box).allSatisfy { abs($0 - $1) <= 0.01 + 1e-9 }
            }, "\(key): batched \(other) one by one \(objects)")
        }
    }

    @Test("a Python plugin's process_batch: each result is of the frame it names (emit's frame=), in each input's order; an exception fails every frame of its call; emit without frame= in a batch is refused")
    func pythonBatches() throws {
        let plugin = try PythonPluginTests.plugin("batches", """
            import cvhost

            class Batches(cvhost.Plugin):
                api_version = (1, 3)
                name = "batches"
                pixel_formats = ("gray8",)
                stateless = True
                options = (cvhost.Option("fail", int, -1, "raise in a batch holding this frame"),
                           cvhost.Option("unnamed", bool, False, "emit without frame="))

                def __init__(self, options):
                    self.fail, self.unnamed = options["fail"], options["unnamed"]

                def process(self, frame):
                    self.emit("seen", {"seq": frame.sequence, "size": 1})

                def process_batch(self, frames):
                    if any(f.sequence == self.fail for f in frames):
                        raise ValueError("this batch fails")
                    for f in reversed(frames):
                        if self.unnamed:
                            self.emit("seen", {"seq": f.sequence, "size": len(frames)})
                        else:
                            self.emit("seen", {"seq": f.sequence, "size": len(frames)}, frame=f)
            """)
        let inputs = ["a=testsrc:160x120@30", "b=testsrc:160x120@30", "c=testsrc:160x120@30"].flatMap { ["--input", $0] }
        let r = try CVHostBinary.run(["run", "--plugin", plugin + ":batch=3,batch_wait_ms=100,backpressure=block", "--max-frames", "20"] + inputs
                                     + ["--metrics-interval", "0"], timeout: 120, environment: PythonPluginTests.python)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let seen = r.events("result").compactMap { e -> (source: String, seq: Int, named: Int, size: Int)? in
            guard let d = e["data"] as? [String: Any], let source = e["source"] as? String, let seq = e["seq"] as? Int,
                  let named = d["seq"] as? Int, let size = d["size"] as? Int else { return nil }
            return (source, seq, named, size)
        }
        #expect(seen.count == 60 && seen.allSatisfy { $0.seq == $0.named }, "\(seen.filter { $0.seq != $0.named }.prefix(5))")
        for source in ["a", "b", "c"] { #expect(seen.filter { $0.source == source }.map(\.seq) == Array(0..<20), "\(source)") }
        #expect(seen.contains { $0.size > 1 } && Self.batches(r).frames == 60, "sizes \(Set(seen.map(\.size))), \(Self.batches(r))")

        // Frame 5 of any input fails its whole call (counted as failed, said once); the rest go on.
        let failing = try CVHostBinary.run(["run", "--plugin", plugin + ":fail=5,batch=3,batch_wait_ms=100,backpressure=block", "--max-frames", "20"] + inputs
                                           + ["--metrics-interval", "0"], timeout: 120, environment: PythonPluginTests.python)
        let failed = failing.events("metrics").filter { $0["final"] as? Bool == true }
            .compactMap { (($0["frames"] as? [String: Any])?["failed"] as? Int) }.reduce(0, +)
        #expect(failed >= 1 && failing.events("result").count == 60 - failed, "failed \(failed), results \(failing.events("result").count)")
        #expect(failing.events("result").allSatisfy { ($0["seq"] as? Int) != 5 })
        #expect(failing.stderr.components(separatedBy: "a Python exception (said once").count == 2, "\(failing.stderr)")

        let unnamed = try CVHostBinary.run(["run", "--plugin", plugin + ":unnamed=true,batch=3,batch_wait_ms=100,backpressure=block", "--max-frames", "5"] + inputs
                                           + ["--metrics-interval", "0"], timeout: 120, environment: PythonPluginTests.python)
        #expect(unnamed.stderr.contains("emit() in process_batch() says which frame a result is of"), "\(unnamed.stderr)")
    }

    @Test("batch and batch_wait_ms are refused where they cannot be: a C plugin (one frame a call), share=false, a wait with no batch")
    func batchRefusals() throws {
        for (options, said) in [("null:batch=4", "takes one frame a call"), ("null:batch_wait_ms=5", "the plugin takes one frame a call"),
                                ("null:batch=1,batch_wait_ms=5", "the plugin takes one frame a call"),
                                ("null:batch=70", "batch")] {
            let r = try CVHostBinary.run(["run", "--plugin", options, "--input", "testsrc", "--max-frames", "1"])
            #expect(r.exitCode == 18 && r.stderr.contains(said) && r.stdout.isEmpty, "\(options): \(r.exitCode) \(r.stderr)")
        }
        let model = DetectPluginTests.model("colour")
        for (options, said) in [("batch=2,share=false", "share=false gives each input its own"), ("batch=1,batch_wait_ms=5", "batch=1 makes none")] {
            let r = try CVHostBinary.run(["run", "--plugin", "detect:model=\(model),\(options)", "--input", "testsrc", "--max-frames", "1"],
                                         environment: DetectPluginTests.python)
            #expect(r.exitCode == 18 && r.stderr.contains(said), "\(options): \(r.exitCode) \(r.stderr)")
        }
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
            // onnxruntime's pool: OpenVINO keeps threads of its own beside its inference threads (4
            // a worker, which took no CPU in a run here), which this count cannot tell apart.
            let r = try CVHostBinary.run(["run", "--plugin", "detect:model=\(model),share=\(share),runtime=onnxruntime", "--input", "a=testsrc:320x240@10",
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
            // Shared: an instance (a worker) per core, at most one per input.
            #expect(threads.count == (share == "true" ? min(cores, 3) : 3), "share=\(share): workers' threads \(threads)")
            #expect(threads.map { $0 - 1 }.reduce(0, +) <= max(cores, threads.count), "share=\(share): \(threads) on \(cores) cores")
        }
    }
}
