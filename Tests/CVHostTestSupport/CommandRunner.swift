import Foundation

/// Runs the built `cvhost` binary (from `swift build`) and collects what it wrote.
public struct CommandResult: Sendable {
    public let exitCode: Int32
    public let stdout: String
    public let stderr: String
    /// True when the time limit ran out and the process was killed.
    public let timedOut: Bool

    /// stdout split into lines (without the newlines).
    public var lines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }

    /// Every stdout line parsed as a JSON object.
    public var events: [[String: Any]] {
        lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    public func events(_ name: String, plugin index: Int? = nil) -> [[String: Any]] {
        events.filter { $0["event"] as? String == name && (index == nil || $0["plugin_index"] as? Int == index) }
    }

    /// The `result` lines without what differs from one run to the next (the wall-clock `ts`,
    /// the run's `session` and each line's `event_id`): what two runs of the same input must agree on.
    public var comparableResults: [String] {
        lines.filter { $0.contains("\"event\":\"result\"") }.map { line in
            line.replacingOccurrences(of: #""ts":[0-9.]+"#, with: "", options: .regularExpression)
                .replacingOccurrences(of: #""session":"[0-9a-f-]+""#, with: "", options: .regularExpression)
                .replacingOccurrences(of: #""event_id":"[0-9a-f-]+""#, with: "", options: .regularExpression)
        }
    }
}

public enum CVHostBinary {
    public static let path = PluginFixtures.packageRoot + "/.build/debug/cvhost"

    /// Runs cvhost with `arguments`, killing it after `timeout` seconds. `onStart` runs once the
    /// process is started (e.g. to send it a signal).
    public static func run(_ arguments: [String], timeout: Double = 60, environment: [String: String] = [:], inFolder: String? = nil,
                           onStart: ((Process) -> Void)? = nil) throws -> CommandResult {
        try run(arguments, timeout: timeout, environment: environment, inFolder: inFolder, withStdin: false,
                onRunning: onStart.map { f in { f($0.process) } })
    }

    /// The same, with a look at the run while it goes on (its output so far, its stdin when
    /// `withStdin`; else stdin is /dev/null).
    /// `under`: a command that runs cvhost as its child (e.g. `timeout 2`), as a script would.
    public static func run(_ arguments: [String], timeout: Double = 60, environment: [String: String] = [:], inFolder: String? = nil,
                           under wrapper: [String] = [], withStdin: Bool, onRunning: ((RunningCVHost) -> Void)?) throws -> CommandResult {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: path + " (run swift build first)"])
        }
        let p = Process()
        if wrapper.isEmpty {
            p.executableURL = URL(fileURLWithPath: path)
            p.arguments = arguments
        } else {
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = wrapper + [path] + arguments
        }
        if let inFolder { p.currentDirectoryURL = URL(fileURLWithPath: inFolder) }
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        let input = withStdin ? Pipe() : nil
        p.standardInput = input ?? FileHandle.nullDevice
        let collected = Collector()
        out.fileHandleForReading.readabilityHandler = { h in collected.appendOut(h.availableData) }
        err.fileHandleForReading.readabilityHandler = { h in collected.appendErr(h.availableData) }
        try p.run()
        onRunning?(RunningCVHost(process: p, collected: collected, input: input?.fileHandleForWriting))
        let deadline = Date().addingTimeInterval(timeout)
        var timedOut = false
        while p.isRunning {
            if Date() > deadline {
                timedOut = true
                p.terminate()
                usleep(200_000)
                if p.isRunning { kill(p.processIdentifier, SIGKILL) }
                break
            }
            usleep(10_000)
        }
        p.waitUntilExit()
        out.fileHandleForReading.readabilityHandler = nil
        err.fileHandleForReading.readabilityHandler = nil
        if let rest = try? out.fileHandleForReading.readToEnd() { collected.appendOut(rest) }
        if let rest = try? err.fileHandleForReading.readToEnd() { collected.appendErr(rest) }
        return CommandResult(exitCode: p.terminationStatus, stdout: collected.outText, stderr: collected.errText, timedOut: timedOut)
    }

    /// Runs `cvhost ARGS | head -c 1`, as a user whose reader quits early would, and returns
    /// cvhost's own exit code and stderr.
    public static func runIntoClosingReader(_ arguments: [String], timeout: Double = 30) throws -> (exitCode: Int32, stderr: String, timedOut: Bool) {
        let quoted = ([path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let errFile = NSTemporaryDirectory() + "cvhost-stderr-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: errFile) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = ["-c", "\(quoted) 2>'\(errFile)' | head -c 1 >/dev/null; exit ${PIPESTATUS[0]}"]
        try p.run()
        let deadline = Date().addingTimeInterval(timeout)
        var timedOut = false
        while p.isRunning {
            if Date() > deadline {
                timedOut = true
                kill(p.processIdentifier, SIGKILL)
                break
            }
            usleep(10_000)
        }
        p.waitUntilExit()
        let err = (try? String(contentsOfFile: errFile, encoding: .utf8)) ?? ""
        return (p.terminationStatus, err, timedOut)
    }

    /// Validates stdout text against the JSON Schema with scripts/validate-jsonl.py.
    /// - Returns: nil when every line is valid, else the validator's report.
    public static func schemaProblems(_ stdout: String) throws -> String? {
        let file = NSTemporaryDirectory() + "cvhost-validate-\(UUID().uuidString).jsonl"
        try stdout.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let r = try Tool.run("python3", [PluginFixtures.packageRoot + "/scripts/validate-jsonl.py", file])
        return r.status == 0 ? nil : r.output
    }
}

/// A cvhost that runs: what it wrote so far, and its stdin.
public struct RunningCVHost: @unchecked Sendable {
    // @unchecked Sendable: Process, FileHandle and the collector are safe to use from several threads.
    public let process: Process
    fileprivate let collected: Collector
    let input: FileHandle?

    public var stdout: String { collected.outText }
    public var stderr: String { collected.errText }
    public var pid: Int32 { process.processIdentifier }

    /// Writes a line to cvhost's stdin (a command).
    public func send(_ line: String) {
        input?.write(Data((line + "\n").utf8))
    }

    /// Writes bytes to cvhost's stdin (an input read from `-`); waits while the pipe is full.
    public func send<D: DataProtocol>(bytes: D) {
        input?.write(Data(bytes))
    }

    public func closeStdin() { try? input?.close() }

    /// Waits until `condition` holds of stdout so far (checked every 50 ms). - Returns: whether it did.
    @discardableResult
    public func wait(timeout: Double = 30, until condition: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(stdout) { return true }
            if !process.isRunning { return condition(stdout) }
            usleep(50_000)
        }
        return false
    }

    /// Waits for a line on stderr containing `text`.
    @discardableResult
    public func waitForStderr(_ text: String, timeout: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stderr.contains(text) { return true }
            if !process.isRunning { return stderr.contains(text) }
            usleep(50_000)
        }
        return false
    }
}

private final class Collector: @unchecked Sendable {
    private let lock = NSLock()
    private var out = Data(), err = Data()
    func appendOut(_ d: Data) { lock.withLock { out.append(d) } }
    func appendErr(_ d: Data) { lock.withLock { err.append(d) } }
    var outText: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
    var errText: String { lock.withLock { String(decoding: err, as: UTF8.self) } }
}
