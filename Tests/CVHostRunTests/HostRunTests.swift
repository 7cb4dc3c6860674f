import CVHostRun
import CVHostTestSupport
import Foundation
import Testing

/// Whole runs in this process (no binary): the test pattern or a missing file into the null
/// plugin, the lines into a file, and the exit code each ending gives. Serialized: a run sets the
/// process's log level and signal handling.
@Suite("HostRun", .serialized)
struct HostRunTests {
    /// Runs `settings` with stdout's lines to a file. - Returns: the lines and the exit code.
    /// Plugins are found beside this test executable, where the build puts them (no environment is
    /// changed: every process the suite starts later would inherit it).
    static func run(_ settings: RunSettings) throws -> (lines: [[String: Any]], exitCode: Int32) {
        let path = TestFolders.make("host-run") + "/lines.jsonl"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        #expect(fd >= 0)
        defer { close(fd) }
        var code: Int32 = 0
        do { try HostRun(settings, resultsDescriptor: fd).run() } catch let failure as RunFailure { code = failure.exitCode }
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
