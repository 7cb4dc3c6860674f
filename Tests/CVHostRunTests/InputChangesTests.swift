@testable import CVHostRun
import CVHostCore
import CVHostTestSupport
import Foundation
import Testing

/// Inputs added, changed and removed while a run goes on (InputChanges, RunInputs), in this
/// process: each command's outcome and the lines it makes. No binary, no HTTP.
@Suite("InputChanges")
struct InputChangesTests {
    /// Runs the test pattern (input `a`) into the null plugin with at most `limit` inputs, gives
    /// `commands` once it runs, one after the other, then stops it.
    /// - Returns: each command's outcome and error, and the run's lines.
    static func run(limit: Int, _ commands: [String]) throws -> (answers: [(LiveCommands.Answer.Outcome, String?)], lines: [[String: Any]]) {
        var settings = try RunSettings(plugins: ["null:results=1"], inputs: ["a=testsrc:160x120@30"], stdinCommands: false, quiet: true)
        try settings.limitInputs(to: limit)
        let answers = Locked<[(LiveCommands.Answer.Outcome, String?)]>([])
        let (lines, _) = try HostRunTests.run(settings) { run in
            // Waits for the run to run: a command before it is not taken (nil).
            var first: LiveCommands.Answer?
            while first == nil {
                first = run.handle(commands[0])
                if first == nil { usleep(10_000) }
            }
            for answer in [first!] + commands.dropFirst().map({ run.handle($0)! }) {
                let json = try? JSONSerialization.jsonObject(with: Data(answer.line.finished())) as? [String: Any]
                answers.withLock { $0.append((answer.outcome, json?["error"] as? String)) }
            }
            run.requestStop(.requested)
        }
        return (answers.withLock { $0 }, lines)
    }

    @Test("an input added, then refused: its name taken, the limit, a plugin the run lacks, an input that cannot be opened; changed, removed, removed again; its lines")
    func addChangeRemove() throws {
        let (answers, lines) = try Self.run(limit: 2, [
            #"{"command":"add_input","name":"b","input":"testsrc:160x120@30"}"#,
            #"{"command":"add_input","name":"b","input":"testsrc:160x120@30"}"#,
            #"{"command":"add_input","name":"c","input":"testsrc:160x120@30"}"#,
            #"{"command":"change_input","name":"b","input":"testsrc:320x240@30","plugins":["none"]}"#,
            #"{"command":"change_input","name":"b","input":"/no/such/clip.mp4"}"#,
            #"{"command":"change_input","name":"b","input":"testsrc:320x240@30"}"#,
            #"{"command":"remove_input","name":"b"}"#,
            #"{"command":"remove_input","name":"b"}"#,
            #"{"command":"get_inputs","name":"b"}"#,
        ])
        let outcomes = answers.map(\.0)
        #expect(outcomes == [.done(created: true), .refused(.conflict), .refused(.conflict), .refused(.unprocessable), .refused(.unprocessable),
                             .done(created: false), .done(created: false), .refused(.notFound), .refused(.notFound)], "\(answers)")
        #expect(answers[1].1?.contains("an input is already called b") == true && answers[2].1?.contains("--max-inputs 2") == true, "\(answers)")
        #expect(answers[4].1?.contains("/no/such/clip.mp4") == true, "\(answers)")
        // b's lines: added, its own session started twice (added, then changed), removed twice (the change's and the removal's).
        let ofB = lines.filter { $0["source"] as? String == "b" }.map { $0["event"] as? String ?? "" }
        #expect(ofB.filter { $0 == "input.added" }.count == 2 && ofB.filter { $0 == "input.removed" }.count == 2, "\(ofB)")
        #expect(ofB.filter { $0 == "session.started" }.count == 2, "\(ofB)")
        let stopped = lines.filter { $0["source"] as? String == "b" && $0["event"] as? String == "session.stopped" }
        #expect(stopped.count == 2 && stopped.allSatisfy { $0["reason"] as? String == "removed" }, "\(stopped)")
        // a went on throughout: one session, ended by the stop.
        let ofA = lines.filter { $0["source"] as? String == "a" && ($0["event"] as? String)?.hasPrefix("session.") == true }
        #expect(ofA.map { $0["event"] as? String } == ["session.started", "session.stopped"], "\(ofA)")
    }

    @Test("the registry: a name reserved while its input opens, the limit counting it, no add once the run closed; a wait for an add under way ends when it is let go")
    func registry() throws {
        let inputs = RunInputs([], limit: 1)
        try inputs.reserve("a", replacing: nil)
        #expect(throws: CommandRefusal.self) { try inputs.reserve("a", replacing: nil) }
        #expect(throws: CommandRefusal.self) { try inputs.reserve("b", replacing: nil) }
        #expect(!inputs.closeWhenIdle())
        let released = Locked(false)
        DispatchQueue.global().async {
            released.withLock { $0 = true }
            inputs.release("a")
        }
        // Woken by the release (the deadline is far): an add under way is waited for without a poll.
        while inputs.closeWhenIdle() == false {
            inputs.waitWhileOpening(untilMonotonicNs: HostClock.monotonicNs() + 60_000_000_000)
        }
        #expect(released.withLock { $0 })
        #expect(inputs.isClosed)
        do {
            try inputs.reserve("c", replacing: nil)
            Issue.record("an input was reserved after the run closed")
        } catch {
            #expect(error.kind == .conflict && error.message.contains("the run is ending"))
        }
    }
}
