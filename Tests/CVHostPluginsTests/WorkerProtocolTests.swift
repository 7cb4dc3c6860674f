import CVHostTestSupport
import Foundation
import Glibc
import Testing
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
