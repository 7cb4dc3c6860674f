@testable import CVHostRun
import CVHostTestSupport
import Foundation
import Testing

/// Whole runs in this process (no binary): the test pattern or a missing file into the null
/// plugin, the lines into a file, and the exit code each ending gives. In parallel: a run changes
/// nothing of the process it runs in (the executable sets up signals, log level and stdout).
@Suite("HostRun")
struct HostRunTests {
    /// Runs `settings` with stdout's lines to a file. - Returns: the lines and the exit code.
    /// Plugins are found beside this test executable, where the build puts them (no environment is
    /// changed: every process the suite starts later would inherit it).
    static func run(_ settings: RunSettings, whileRunning: (@Sendable (HostRun) -> Void)? = nil) throws -> (lines: [[String: Any]], exitCode: Int32) {
        let path = TestFolders.make("host-run") + "/lines.jsonl"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        #expect(fd >= 0)
        defer { close(fd) }
        var code: Int32 = 0
        let run = HostRun(settings, resultsDescriptor: fd)
        if let whileRunning { DispatchQueue.global().async { whileRunning(run) } }
        do { try run.run() } catch let failure as RunFailure { code = failure.exitCode }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n").map { try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        return (lines, code)
    }

    @Test("a run with results ends by --max-frames: session.started, the results, final metrics, session.stopped; exit 0")
    func results() throws {
        let (lines, code) = try Self.run(try RunSettings(plugins: ["null:results=1"], inputs: ["testsrc:160x120:unpaced"], maxFrames: 4,
                                                         stdinCommands: false, quiet: true))
        #expect(code == 0)
        let events = lines.map { $0["event"] as? String ?? "" }
        #expect(events.first == "session.started")
        #expect(events.filter { $0 == "result" }.count == 4)
        #expect(events.suffix(2) == ["metrics", "session.stopped"])
        #expect(lines.last?["reason"] as? String == "frame_limit")
    }

    @Test("no result from a run that ended by itself: exit 22, with its lines all written")
    func nothingFound() throws {
        let (lines, code) = try Self.run(try RunSettings(plugins: ["null"], inputs: ["testsrc:160x120:unpaced"], maxFrames: 2,
                                                         stdinCommands: false, quiet: true))
        #expect(code == ExitCodes.nothingFound)
        #expect(lines.last?["event"] as? String == "session.stopped")
    }

    @Test("a plugin failing on every frame: exit 23")
    func failingEveryFrame() throws {
        let (_, code) = try Self.run(try RunSettings(plugins: ["null:fail_every=1"], inputs: ["testsrc:160x120:unpaced"], maxFrames: 3,
                                                     stdinCommands: false, quiet: true))
        #expect(code == ExitCodes.pluginFailedEveryFrame)
    }

    @Test("refusals before anything opens: a plugin not found (10), a bad plugin option (17), an input that cannot be opened (3); no line written")
    func refusals() throws {
        let notFound = try Self.run(try RunSettings(plugins: ["no-such-plugin"], inputs: ["testsrc"], stdinCommands: false, quiet: true))
        #expect(notFound.exitCode == 10)
        let badOption = try Self.run(try RunSettings(plugins: ["null:colour=red"], inputs: ["testsrc"], stdinCommands: false, quiet: true))
        #expect(badOption.exitCode == 17)
        let missing = try Self.run(try RunSettings(plugins: ["null"], inputs: ["/nonexistent/clip.mp4"], stdinCommands: false, quiet: true))
        #expect(missing.exitCode == ExitCodes.inputUnavailable)
        #expect(notFound.lines.isEmpty && badOption.lines.isEmpty && missing.lines.isEmpty)
    }

    @Test("--duration stops a live input with no result: exit 22, stopped for 'duration'")
    func duration() throws {
        let (lines, code) = try Self.run(try RunSettings(plugins: ["null"], inputs: ["testsrc:160x120@30"], duration: 0.3,
                                                         stdinCommands: false, quiet: true))
        #expect(code == ExitCodes.nothingFound)
        #expect(lines.last?["reason"] as? String == "duration")
    }
}

extension HostRunTests {
    @Test("a run leaves SIGINT, SIGTERM and SIGHUP as it found them (an ignored SIGHUP would be inherited by every later child)")
    func signalsRestored() throws {
        var before = sigaction()
        sigaction(SIGHUP, nil, &before)
        _ = try Self.run(try RunSettings(plugins: ["null"], inputs: ["testsrc:160x120:unpaced"], maxFrames: 1, stdinCommands: false, quiet: true))
        var after = sigaction()
        sigaction(SIGHUP, nil, &after)
        #expect(unsafeBitCast(after.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(before.__sigaction_handler.sa_handler, to: Int.self))
    }
}

extension HostRunTests {
    @Test("a stop asked for from another thread (as the executable's signal handler does) ends a live run cleanly: final lines, exit 0, reason signal")
    func requestedStop() throws {
        let (lines, code) = try Self.run(try RunSettings(plugins: ["null:results=1"], inputs: ["testsrc:160x120@30"], stdinCommands: false)) { run in
            // Once its inputs are open (a stop before that ends a run without a session, exit 0 all the same).
            while run.phase.withLock({ $0 }) != .running { usleep(10_000) }
            run.requestStop()
        }
        #expect(code == 0)
        #expect(lines.last?["event"] as? String == "session.stopped" && lines.last?["reason"] as? String == "signal", "\(lines.last ?? [:])")
        #expect(lines.contains { $0["event"] as? String == "metrics" && $0["final"] as? Bool == true })
    }

    @Test("four runs side by side in one process: each its own lines and exit code")
    func sideBySide() async throws {
        let codes = try await withThrowingTaskGroup(of: (Int, Int32, Int).self) { group in
            for i in 0..<4 {
                group.addTask {
                    let (lines, code) = try Self.run(try RunSettings(plugins: ["null:results=\(i % 2)"], inputs: ["testsrc:160x120:unpaced"],
                                                                     maxFrames: UInt64(3 + i), stdinCommands: false))
                    return (i, code, lines.filter { $0["event"] as? String == "result" }.count)
                }
            }
            var all: [(Int, Int32, Int)] = []
            for try await r in group { all.append(r) }
            return all.sorted { $0.0 < $1.0 }
        }
        #expect(codes.map(\.1) == [ExitCodes.nothingFound, 0, ExitCodes.nothingFound, 0])
        #expect(codes.map(\.2) == [0, 4, 0, 6])
    }
}

