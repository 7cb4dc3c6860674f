import CVHostTestSupport
import Foundation
import Glibc
import Testing
import CVHostPluginABI
@testable import CVHostPlugins

/// The worker protocol has two ends written apart (cvhost's own worker, and the Python runtime's):
/// both check the version in hello, `ready` carries the worker's, and a message kind an end does
/// not know is answered at once with `failed`, never left for cvhost to time out on.
@Suite("Worker protocol: versions and unknown kinds")
struct WorkerProtocolTests {
    static let folder = TestFolders.make("worker-protocol")

    /// The two kinds of worker: cvhost's executable on the null plugin, and python3 on a Python plugin.
    static func programs() throws -> [(name: String, program: WorkerProgram, plugin: String)] {
        let python = folder + "/p.py"
        try "import cvhost\n\nclass P(cvhost.Plugin):\n    api_version = (1, 0)\n    name = 'p'\n\n    def process(self, frame):\n        pass\n"
            .write(toFile: python, atomically: true, encoding: .utf8)
        let host = WorkerProgram(executable: CVHostBinary.path, arguments: [PluginWorker.flag], environment: ProcessInfo.processInfo.environment)
        return [("cvhost's worker", host, PluginFixtures.packageRoot + "/.build/debug/libcvhost-null.so"),
                ("the Python runtime", try PythonPlugin.workerProgram(path: python), python)]
    }

    static func hello(_ path: String, version: UInt32 = WorkerMessage.protocolVersion) -> WorkerMessage {
        .hello(WorkerMessage.Hello(version: version, path: path, pluginIndex: 0, instances: 1, instanceCount: 1, label: "test", options: []))
    }

    @Test("hello of this version: ready carries the worker's version; a kind the worker does not know is answered with failed at once")
    func readyAndUnknownKind() throws {
        for (name, program, plugin) in try Self.programs() {
            let worker = try WorkerProcess(program: program, instances: 1, generation: 1)
            defer { worker.kill(); worker.reap() }
            let channel = worker.channels[0]
            #expect(channel.send(Self.hello(plugin)))
            guard case .message(.ready(let version, let request), _) = channel.receive(timeoutMs: 30_000) else {
                Issue.record("\(name): no ready")
                continue
            }
            #expect(version == WorkerMessage.protocolVersion && request == nil, "\(name)")
            // One packet: "no more follow", then kind 200, which no version has.
            let packet: [UInt8] = [0, 200]
            #expect(packet.withUnsafeBytes { Glibc.send(channel.fd, $0.baseAddress, $0.count, 0) } == 2)
            guard case .message(.failed(let kind, let message), _) = channel.receive(timeoutMs: 10_000) else {
                Issue.record("\(name): the unknown kind was not answered")
                continue
            }
            #expect(kind == "protocol_error" && message.contains("kind 200"), "\(name): \(kind) \(message)")
        }
    }

    @Test("process_batch: three frames in one message are answered in turn by either worker, each frame's results before its done (the Python runtime's process_batch; process for each where a plugin has none)")
    func processBatch() throws {
        let batched = Self.folder + "/batched.py"
        try """
            import cvhost

            class B(cvhost.Plugin):
                api_version = (1, 3)
                name = "b"

                def process(self, frame):
                    self.emit("one", {"seq": frame.sequence})

                def process_batch(self, frames):
                    for f in reversed(frames):
                        self.emit("many", {"seq": f.sequence, "of": len(frames)}, frame=f)
            """.write(toFile: batched, atomically: true, encoding: .utf8)
        var programs = try Self.programs()
        programs.append(("a Python plugin with process_batch", try PythonPlugin.workerProgram(path: batched), batched))
        for (name, program, plugin) in programs {
            let worker = try WorkerProcess(program: program, instances: 1, generation: 1)
            defer { worker.kill(); worker.reap() }
            let channel = worker.channels[0]
            #expect(channel.send(Self.hello(plugin)))
            guard case .message(.ready, _) = channel.receive(timeoutMs: 30_000) else {
                Issue.record("\(name): no ready")
                continue
            }
            // Frames of no planes: nothing to map, their fields alone.
            let frames = [5, 6, 7].map { seq -> WorkerMessage.FrameMessage in
                var f = cvhost_frame()
                f.sequence = UInt64(seq)
                return WorkerMessage.FrameMessage(memory: [], frame: f)
            }
            #expect(channel.send(.processBatch(frames)))
            var answers: [String] = []
            while answers.filter({ $0.hasPrefix("done") }).count < 3 {
                switch channel.receive(timeoutMs: 10_000) {
                case .message(.result(let type, let json), _): answers.append(String(decoding: type, as: UTF8.self) + " " + String(decoding: json, as: UTF8.self))
                case .message(.done(let status), _): answers.append("done \(status)")
                default:
                    Issue.record("\(name): \(answers), then no answer")
                    answers += ["done", "done", "done"]
                }
            }
            switch name {
            case "the Python runtime":
                #expect(answers == ["done 0", "done 0", "done 0"], "\(name): \(answers)")
            case "a Python plugin with process_batch":
                #expect(answers == [#"many {"seq":5,"of":3}"#, "done 0", #"many {"seq":6,"of":3}"#, "done 0", #"many {"seq":7,"of":3}"#, "done 0"],
                        "\(name): \(answers)")
            default:
                #expect(answers.filter { $0.hasPrefix("done") } == ["done 0", "done 0", "done 0"], "\(name): \(answers)")
            }
            // A message cut short is not a batch.
            #expect(WorkerMessage(decoding: Array(WorkerMessage.processBatch(frames).encoded().dropLast(9))) == nil)
        }
    }

    @Test("hello of another version is refused by either worker with failed (abi_mismatch), naming both versions")
    func otherVersion() throws {
        for (name, program, plugin) in try Self.programs() {
            let worker = try WorkerProcess(program: program, instances: 1, generation: 1)
            defer { worker.kill(); worker.reap() }
            #expect(worker.channels[0].send(Self.hello(plugin, version: 99)))
            guard case .message(.failed(let kind, let message), _) = worker.channels[0].receive(timeoutMs: 30_000) else {
                Issue.record("\(name): no answer to a hello of version 99")
                continue
            }
            #expect(kind == "abi_mismatch" && message.contains("99") && message.contains("\(WorkerMessage.protocolVersion)"), "\(name): \(message)")
        }
    }
}
