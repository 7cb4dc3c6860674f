import CVHostCore
import CVHostOutput
import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostRun

/// Commands while running (stdin's lines and POST /controls' bodies), refused or carried out,
/// each answered by a command.result object with the HTTP status that says why.
@Suite("LiveCommands")
struct LiveCommandsTests {
    /// Commands for a run with no input left to change: what is refused before any is looked at.
    static func commands() throws -> (LiveCommands, RunStop) {
        let path = TestFolders.make("live-commands") + "/lines.jsonl"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        let router = try OutputRouter(destinations: [.stdout], stdoutDescriptor: fd, connectTimeout: 1, onStdoutClosed: {})
        let stop = RunStop(sessions: [])
        return (LiveCommands(inputs: RunInputs([], limit: 1), changes: nil, rules: nil, counts: nil, lines: RunLines(output: router, sources: 0), stop: stop), stop)
    }

    static func answer(_ body: String, from origin: LiveCommands.Origin = .http) throws -> (status: Int, json: [String: Any]) {
        let (commands, _) = try commands()
        let (status, line) = commands.handle(Array(body.utf8), from: origin)
        let json = try JSONSerialization.jsonObject(with: Data(line.finished())) as? [String: Any] ?? [:]
        return (status, json)
    }

    @Test("bodies that are not one JSON object are 400, said in the answer's error", arguments: [
        "", "not json", "[1, 2]", "{\"command\":", "\"set_control\"", "{\"command\": \"stop\"} trailing",
    ])
    func notJSON(body: String) throws {
        let (status, json) = try Self.answer(body)
        #expect(status == 400)
        #expect(json["ok"] as? Bool == false)
        #expect((json["error"] as? String)?.hasPrefix("a command is one JSON object") == true, "\(json)")
        #expect(json["event"] as? String == "command.result")
    }

    @Test("refusals: an unknown field, an unknown command, a command without what it needs, a plugin the run does not have")
    func refusals() throws {
        let cases: [(String, Int, String)] = [
            (#"{"command":"stop","colour":1}"#, 400, "unknown field \"colour\""),
            (#"{"command":"dance"}"#, 400, "unknown command \"dance\": set_control, set_plugin, reload, get_controls, get_inputs, add_input, change_input, remove_input, get_analytics"),
            (#"{"id":3}"#, 400, "a command needs \"command\""),
            (#"{"command":"reload"}"#, 400, "reload needs \"plugin\""),
            (#"{"command":"reload","plugin":"sharpness"}"#, 404, "no plugin sharpness"),
            (#"{"command":"set_plugin","plugin":"barcode"}"#, 400, "set_plugin needs \"enabled\" or \"max_fps\""),
            (#"{"command":"set_control","value":3}"#, 400, "set_control needs \"name\""),
            (#"{"command":"add_input"}"#, 400, "an input needs \"input\""),
            (#"{"command":"add_input","input":"a.mp4","device":"/dev/video0"}"#, 400, "give one of \"input\""),
            (#"{"command":"add_input","input":"-"}"#, 400, "cannot be added while running"),
            (#"{"command":"add_input","input":"a.mp4","name":"a/b"}"#, 400, "\"name\" is 1 to 64 letters"),
            (#"{"command":"add_input","input":"a.mp4","plugins":"detect"}"#, 400, "\"plugins\" is a list"),
            (#"{"command":"add_input","input":"a.mp4","plugins":[]}"#, 400, "\"plugins\" names at least one"),
            (#"{"command":"change_input","input":"a.mp4"}"#, 400, "this command needs \"name\""),
            (#"{"command":"remove_input"}"#, 400, "remove_input needs \"name\""),
            (#"{"command":"remove_input","name":"gate"}"#, 409, "this run cannot add or remove inputs"),
        ]
        for (body, code, message) in cases {
            let (status, json) = try Self.answer(body, from: .stdin)
            #expect(status == code, "\(body): \(json)")
            #expect((json["error"] as? String)?.contains(message) == true, "\(body): \(json)")
        }
        // The id is echoed, a string or a number.
        #expect(try Self.answer(#"{"command":"dance","id":"a7"}"#).json["id"] as? String == "a7")
    }

    @Test("stop asks the run to stop, and is answered ok")
    func stop() throws {
        let (commands, stop) = try Self.commands()
        let (status, line) = commands.handle(Array(#"{"command":"stop","id":1}"#.utf8), from: .stdin)
        #expect(status == 200)
        #expect(String(decoding: line.finished(), as: UTF8.self).contains("\"ok\":true"))
        #expect(stop.requested?.why == .requested)
    }
}
