import CVHostAnalytics
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
        let answer = commands.handle(Array(body.utf8), from: origin)
        let json = try JSONSerialization.jsonObject(with: Data(answer.line.finished())) as? [String: Any] ?? [:]
        return (answer.outcome.httpStatus, json)
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
            (#"{"command":"add_input","input":"a.mp4","record":"rtsp://cam/main"}"#, 400, "record= goes with a network camera's stream"),
            (#"{"command":"add_input","input":"rtsp://cam/sub","record":"main.mp4"}"#, 400, "record= is the camera's stream to record clips from, a URL"),
            (#"{"command":"add_input","input":"rtsp://cam/sub","record":3}"#, 400, "\"record\" is the camera's stream to record clips from"),
            (#"{"command":"change_input","input":"a.mp4"}"#, 400, "this command needs \"name\""),
            (#"{"command":"remove_input"}"#, 400, "remove_input needs \"name\""),
            (#"{"command":"remove_input","name":"gate"}"#, 409, "this run cannot add or remove inputs"),
            (#"{"command":"set_colour","name":"x"}"#, 400, "unknown command \"set_colour\""),
            (#"{"command":"set_zone","points":[[0,0],[1,0],[1,1]]}"#, 400, "set_zone needs \"name\""),
            (#"{"command":"set_zone","name":"bay","points":[[0,0],[1,0],[1,1]],"in":"left"}"#, 400, "a zone has no \"in\""),
            (#"{"command":"set_line","name":"gate","points":[[0,0],[0,0]]}"#, 400, "line gate: its two points are the same"),
            (#"{"command":"set_track","plugin":"detect","low":0.6,"high":0.5}"#, 400, "track detect: low (0.6) must not be above high (0.5)"),
            (#"{"command":"set_zone","name":"bay","points":[[0,0],[1,0],[1,1]]}"#, 409, "this run cannot change its analytics"),
            (#"{"command":"reset_counts","line":"a","zone":"b"}"#, 400, "reset_counts sets back one line or one zone"),
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
        let answer = commands.handle(Array(#"{"command":"stop","id":1}"#.utf8), from: .stdin)
        #expect(answer.outcome == .done(created: false))
        #expect(String(decoding: answer.line.finished(), as: UTF8.self).contains("\"ok\":true"))
        #expect(stop.requested?.why == .requested)
    }

    @Test("each command's JSON is read into its case, typed: a rule checked as its flag's text is, the route's name put in")
    func typed() throws {
        guard case .setRule(.zone(let name, let zone?)) = try LiveCommand("set_zone", try LiveCommand.object(
            Array(#"{"points":[[0,0],[10,0],[10,10]],"dwell":30,"labels":"car+bus"}"#.utf8), implied: "set_zone", target: "bay")) else {
            Issue.record("not a zone set")
            return
        }
        let same = try AnalyticsSpec.zone("bay=0,0 10,0 10,10:dwell=30,labels=bus+car")
        #expect(name == "bay" && zone == same)
        guard case .removeRule(.filter, let label, let input) = try LiveCommand("remove_filter", ["label": .string("car"), "input": .string("door")]) else {
            Issue.record("not a filter removed")
            return
        }
        #expect(label == "car" && input == "door")
        guard case .setPlugin(let plugins, let enabled, let maxFPS) = try LiveCommand("set_plugin", ["plugin": .string("detect"), "plugin_index": .number(1),
                                                                                                     "max_fps": .number(2)]) else {
            Issue.record("not set_plugin")
            return
        }
        #expect(plugins == LiveCommand.Plugins(plugin: "detect", source: nil, index: 1) && enabled == nil && maxFPS == 2)
        #expect(throws: CommandRefusal.self) { try LiveCommand.object(Array(#"{"name":"other"}"#.utf8), implied: "set_zone", target: "bay") }
        // A camera's two streams: "record" beside "input", as --input's ,record=URL; shown without passwords.
        guard case .addInput(let spec, _) = try LiveCommand("add_input", ["input": .string("rtsp://u:pw@cam/sub"), "name": .string("door"),
                                                                          "record": .string("rtsp://u:pw@cam/main")]) else {
            Issue.record("not add_input")
            return
        }
        #expect(spec.record == "rtsp://u:pw@cam/main" && spec.sourceID() == "door")
        #expect(InputSpec.shown("rtsp://u:pw@cam/sub,record=rtsp://u:pw@cam/main") == "rtsp://u:***@cam/sub,record=rtsp://u:***@cam/main")
        #expect(InputSpec(kind: .input("rtsp://cam/sub,record=rtsp://cam/main"), name: nil).sourceID() == "rtsp://cam/sub")
    }
}
