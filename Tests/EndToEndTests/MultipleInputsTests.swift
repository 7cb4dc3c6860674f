import CVHostTestSupport
import Foundation
import Testing

/// Several inputs in one run: each its own session, plugin instances and metrics, every line
/// tagged with its `source`; one input that fails leaves the others running.
@Suite("several inputs")
struct MultipleInputsTests {
    static func codes(_ r: CommandResult, source: String) -> Set<String> {
        Set(r.events("result").filter { $0["source"] as? String == source }
            .compactMap { ($0["data"] as? [String: Any])?["text"] as? String })
    }

    @Test("an RTSP stream and a file with two plugins: every line tagged, every result present, metrics per input and plugin")
    func streamAndFile() throws {
        let server = try TestServer("rtsp_server.py", ["--file", BarcodeFixtures.demoVideo])
        defer { server.stop() }
        let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--plugin", "null:results=1",
                                      "--input", "gate=rtsp://127.0.0.1:\(server.port)/codes", "--input", BarcodeFixtures.demoVideo,
                                      "--metrics-interval", "0"], timeout: 60)
        let file = BarcodeFixtures.demoVideo
        #expect(r.events.allSatisfy { ["gate", file].contains($0["source"] as? String) }, "every line names its input")
        #expect(MultipleInputsTests.codes(r, source: "gate") == StreamInputTests.demoCodes, "\(r.stderr)")
        #expect(MultipleInputsTests.codes(r, source: file) == StreamInputTests.demoCodes)
        // The file is read whole: one null result per frame.
        let fileNulls = r.events("result").filter { $0["source"] as? String == file && $0["plugin"] as? String == "null" }
        #expect(fileNulls.count == 90)
        for source in ["gate", file] {
            let finals = r.events("metrics").filter { $0["source"] as? String == source && $0["final"] as? Bool == true }
            #expect(finals.compactMap { $0["plugin"] as? String }.sorted() == ["barcode", "null"], "\(source)")
            #expect(r.events("session.started").filter { $0["source"] as? String == source }.count == 1)
            let lastOfSource = r.events.last { $0["source"] as? String == source }
            #expect(lastOfSource?["event"] as? String == "session.stopped", "an input's last line is its session.stopped")
        }
        // The stream ending is a lost connection for that input only; the file ends as files do.
        #expect(r.events("session.error").map { $0["source"] as? String } == ["gate"])
        #expect(r.exitCode == 2, "an input that failed makes the run's exit code 2")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
    }

    @Test("a stream lost mid-run does not stop the other input")
    func oneFailsOthersGoOn() throws {
        let clip = try StreamFixtures.longCodes(times: 10)
        let server = try TestServer("rtsp_server.py", ["--file", clip])
        defer { server.stop() }
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "cam=rtsp://127.0.0.1:\(server.port)/codes",
                                      "--input", "pattern=testsrc:160x120@30", "--duration", "8", "--metrics-interval", "0"],
                                     timeout: 60) { _ in
            DispatchQueue.global().asyncAfter(deadline: .now() + 3) { server.stop() }
        }
        #expect(r.exitCode == 2, "\(r.stderr)")
        let events = r.events
        let error = try #require(events.firstIndex { $0["event"] as? String == "session.error" })
        #expect(events[error]["source"] as? String == "cam" && events[error]["code"] as? String == "disconnected")
        #expect(events[error...].contains { $0["event"] as? String == "result" && $0["source"] as? String == "pattern" },
                "the test pattern goes on after the stream is lost")
        let stops = r.events("session.stopped")
        #expect(stops.first { $0["source"] as? String == "pattern" }?["reason"] as? String == "duration")
        #expect(stops.first { $0["source"] as? String == "cam" }?["reason"] as? String == "error")
        #expect(r.stderr.contains("cvhost: [cam] error: rtsp://"), "messages name their input: \(r.stderr)")
    }

    @Test("images of two inputs: --input a.png --input b.png reads both; `image` names the file")
    func twoImages() throws {
        let a = try BarcodeFixtures.path("qr-text.png")
        let b = try BarcodeFixtures.path("ean13.png")
        let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", a, "--input", b])
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(r.events("result").map { $0["source"] as? String } .sorted { ($0 ?? "") < ($1 ?? "") } == [a, b].sorted())
        #expect(r.events("result").allSatisfy { $0["image"] as? String == $0["source"] as? String })
        #expect(r.events("session.stopped").count == 2)
    }

    @Test("names and inputs are checked before anything runs")
    func refusals() throws {
        let demo = BarcodeFixtures.demoVideo
        let twice = try CVHostBinary.run(["run", "--plugin", "null", "--input", demo, "--input", demo])
        #expect(twice.exitCode == 64 && twice.stderr.contains("two inputs are called '\(demo)'"), "\(twice.stderr)")
        let sameName = try CVHostBinary.run(["run", "--plugin", "null", "--input", "a=\(demo)", "--input", "a=testsrc"])
        #expect(sameName.exitCode == 64 && sameName.stderr.contains("two inputs are called 'a'"))
        let stdinTwice = try CVHostBinary.run(["run", "--plugin", "null", "--input", "a=-", "--input", "b=-"])
        #expect(stdinTwice.exitCode == 64 && stdinTwice.stderr.contains("standard input (-) can be read by one --input only"))
        let empty = try CVHostBinary.run(["run", "--plugin", "null", "--input", "gate="])
        #expect(empty.exitCode == 64 && empty.stderr.contains("give what to read after the name"))
        // One input that cannot be opened: exit 3 naming it, and no line at all.
        let missing = try CVHostBinary.run(["run", "--plugin", "null", "--input", "ok=testsrc", "--input", "gone=/nonexistent.mp4"])
        #expect(missing.exitCode == 3 && missing.stderr.contains("gone: input /nonexistent.mp4 not found") && missing.stdout.isEmpty,
                "\(missing.stderr)")
        // A file whose own name looks like NAME=... is that file.
        let odd = MediaFixtures.folder + "/odd=name.mp4"
        try? FileManager.default.removeItem(atPath: odd)
        try FileManager.default.copyItem(atPath: demo, toPath: odd)
        let oddRun = try Tool.run("/bin/bash", ["-c", "cd '\(MediaFixtures.folder)' && '\(CVHostBinary.path)' run --plugin null:results=1 -q --input odd=name.mp4 --max-frames 1"])
        #expect(oddRun.status == 0 && oddRun.output.contains("\"source\":\"odd=name.mp4\""), "\(oddRun.output)")
    }
}
