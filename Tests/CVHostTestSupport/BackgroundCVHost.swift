import Foundation
import Glibc

/// The built cvhost running in the background through a test (a fleet's node), its stdout and
/// stderr in files of its own: several at once, each signalled as the test needs (SIGKILL,
/// SIGSTOP, SIGCONT, SIGTERM). Started as a LoneProcess (why not Foundation's Process: there).
public final class BackgroundCVHost: @unchecked Sendable {
    // @unchecked Sendable: the process is signalled and waited for by the test that started it.
    private let process: LoneProcess
    public let stdoutPath: String
    public let stderrPath: String

    public init(_ arguments: [String], name: String, environment: [String: String] = [:]) throws {
        let folder = TestFolders.make("node-\(name)")
        stdoutPath = folder + "/stdout.jsonl"
        stderrPath = folder + "/stderr.txt"
        let env = environment.sorted { $0.key < $1.key }.map { "\($0.key)='\($0.value)' " }.joined()
        process = try LoneProcess("/bin/sh", ["-c", "\(env)exec \"$0\" \"$@\" >'\(stdoutPath)' 2>'\(stderrPath)'", CVHostBinary.path] + arguments)
    }

    public var pid: pid_t { process.pid }
    public var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    public var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// stdout's complete lines, as JSON objects.
    public var lines: [[String: Any]] {
        stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    public func signal(_ s: Int32) { kill(process.pid, s) }

    /// SIGTERM, and waits for the end.
    public func stop() { process.stop() }

    /// SIGKILL, and waits for the end.
    public func killNow() {
        kill(process.pid, SIGKILL)
        process.wait()
    }

    deinit {
        kill(process.pid, SIGCONT)
        kill(process.pid, SIGKILL)
    }
}
