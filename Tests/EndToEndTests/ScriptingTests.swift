import CVHostTestSupport
import Foundation
import Testing

/// What a script relies on: --oneshot, and exit codes that say whether anything was found, whether a
/// plugin failed on every frame, and whether an input could be read at all.
@Suite("scripting: --oneshot and exit codes")
struct ScriptingTests {
    static let folder = TestFolders.make("scripting")

    @Test("--oneshot writes the first frame with a result (every result of it, from every plugin) and stops: exit 0, reason first_result")
    func oneshot() throws {
        let r = try CVHostBinary.run(["run", "--oneshot", "--plugin", "barcode", "--plugin", "null:results=1",
                                      "--input", BarcodeFixtures.demoVideo, "--metrics-interval", "0"], timeout: 60)
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        let results = r.events("result")
        #expect(Set(results.compactMap { $0["seq"] as? Int }) == [0], "\(results.map { $0["seq"] ?? "nil" })")
        #expect(Set(results.compactMap { $0["plugin"] as? String }) == ["barcode", "null"])
        #expect(r.events.last?["event"] as? String == "session.stopped" && r.events.last?["reason"] as? String == "first_result")
        let frames = r.events.last?["frames"] as? Int ?? 0
        #expect(frames >= 1 && frames < 90, "stopped early: \(frames) of 90 frames")
        // Nothing to find: the input ends, exit 22.
        let blank = try CVHostBinary.run(["run", "--oneshot", "--plugin", "barcode", "--input", try BarcodeFixtures.path("blank.png"), "-q"])
        #expect(blank.exitCode == 22 && blank.events("result").isEmpty, "\(blank.stderr)")
    }

    @Test("exit 22 when a run that ended by itself found nothing; 0 when a signal stopped it; 23 when a plugin failed every frame")
    func nothingFoundAndFailures() throws {
        let nothing = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc:unpaced", "--max-frames", "3"])
        #expect(nothing.exitCode == 22 && nothing.stderr.contains("nothing found"), "\(nothing.stderr)")
        let timed = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "--duration", "0.5", "-q"])
        #expect(timed.exitCode == 22)
        let found = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "testsrc:unpaced", "--max-frames", "3", "-q"])
        #expect(found.exitCode == 0)
        let signalled = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "-q"], timeout: 30, withStdin: false) { running in
            #expect(running.wait { $0.contains("\"event\":\"session.started\"") })
            kill(running.pid, SIGTERM)
        }
        #expect(signalled.exitCode == 0, "a stop asked for is not 'nothing found'")
        // Every process() call fails: 23 (which outranks 22), with the plugin named.
        let failing = try CVHostBinary.run(["run", "--plugin", "null:fail_every=1", "--input", "testsrc:unpaced", "--max-frames", "5"])
        #expect(failing.exitCode == 23 && failing.stderr.contains("plugin null failed on every frame"), "\(failing.stderr)")
        // Some fail, some pass: not 23.
        let some = try CVHostBinary.run(["run", "--plugin", "null:fail_every=2,results=1", "--input", "testsrc:unpaced", "--max-frames", "6", "-q"])
        #expect(some.exitCode == 0)
    }

    @Test("images none of which decode are exit 3, as a corrupt video is; an image too large for the decoder says so")
    func unreadableImages() throws {
        let folder = ScriptingTests.folder + "/broken"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "not a picture".write(toFile: folder + "/a.png", atomically: true, encoding: .utf8)
        try Data([0xFF, 0xD8, 0xFF, 0x00]).write(to: URL(fileURLWithPath: folder + "/b.jpg"))
        let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", folder])
        #expect(r.exitCode == 3, "\(r.stderr)")
        #expect(r.events("input.skipped").count == 2)
        #expect(r.stderr.contains("none of its images could be read"))
        // A PNG whose header says 40000x40000: more than --max-image-pixels, and more than FFmpeg's decoders take.
        let huge = ScriptingTests.folder + "/huge.png"
        try ScriptingTests.pngHeader(width: 40000, height: 40000).write(to: URL(fileURLWithPath: huge))
        for (limit, said) in [([String](), "declares 40000x40000 pixels, more than --max-image-pixels"), (["--max-image-pixels", "0"], "larger than FFmpeg decodes")] {
            let big = try CVHostBinary.run(["run", "--plugin", "null", "--input", huge] + limit)
            #expect(big.exitCode == 3)
            let skipped = try #require(big.events("input.skipped").first)
            #expect((skipped["reason"] as? String)?.contains(said) == true, "\(skipped)")
            #expect(!big.stderr.contains("no image in the file"))
        }
        // One readable image among broken ones: the run reads it (exit 22: a null plugin finds nothing).
        try FileManager.default.copyItem(atPath: try BarcodeFixtures.path("blank.png"), toPath: folder + "/c.png")
        #expect(try CVHostBinary.run(["run", "--plugin", "null", "--input", folder, "-q"]).exitCode == 22)
    }

    /// A PNG with a valid header for the size asked and a little image data.
    static func pngHeader(width: UInt32, height: UInt32) -> Data {
        func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
            let typed = Array(type.utf8) + body
            return withUnsafeBytes(of: UInt32(body.count).bigEndian, Array.init) + typed + withUnsafeBytes(of: crc32(typed).bigEndian, Array.init)
        }
        let ihdr = withUnsafeBytes(of: width.bigEndian, Array.init) + withUnsafeBytes(of: height.bigEndian, Array.init) + [8, 0, 0, 0, 0]
        // A stored (uncompressed) zlib block of 16 zero bytes.
        let idat: [UInt8] = [0x78, 0x01, 0x01, 0x10, 0x00, 0xEF, 0xFF] + [UInt8](repeating: 0, count: 16) + [0x00, 0x00, 0x00, 0x01]
        return Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr) + chunk("IDAT", idat) + chunk("IEND", []))
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        }
        return ~c
    }

    @Test("the progress line is shown on a terminal, but not on the terminal the JSON lines go to (it ran into them)")
    func progressOnTerminal() throws {
        let folder = TestFolders.make("progress")
        let run = [CVHostBinary.path, "run", "--plugin", "null:results=1", "--input", BarcodeFixtures.demoVideo, "--metrics-interval", "0"]
            .map { "'\($0)'" }.joined(separator: " ")
        // script(1) gives the run a terminal for stdout and stderr; its output is what the terminal showed.
        let both = try Tool.run("script", ["-qec", run, "/dev/null"])
        #expect(both.status == 0, "\(both.output.suffix(500))")
        #expect(both.output.contains("\"event\":\"session.stopped\"") && !both.output.contains("cvhost: frame")
                && !both.output.contains("frames read"), "\(both.output.suffix(500))")
        // stdout to a file, stderr on the terminal: the progress line, and its last word.
        let apart = try Tool.run("script", ["-qec", run + " > '\(folder)/out.jsonl'", "/dev/null"])
        #expect(apart.status == 0 && apart.output.contains("cvhost: 90 frames read"), "\(apart.output.suffix(500))")
        let lines = try String(contentsOfFile: folder + "/out.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(!lines.isEmpty && lines.allSatisfy { $0.hasPrefix("{\"event\":") })
    }
}
