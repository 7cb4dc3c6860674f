import CVHostTestSupport
import Foundation
import Glibc
import Testing

/// Inputs and outputs that could hold a run for ever or take all memory: a named pipe among
/// images, a picture that declares gigabytes, a named pipe as an output with no reader, lists too
/// long to parse (issue 40's section 7, each reproduced first).
@Suite("input and output bounds")
struct InputBoundsTests {
    static func png(_ path: String, width: Int, height: Int) throws {
        try Tool.check("python3", ["-c", """
            import struct, sys, zlib
            w, h = \(width), \(height)
            def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
            c = zlib.compressobj(9)
            row = b"\\0" * (w + 1)
            data = b"".join(c.compress(row) for _ in range(h)) + c.flush()
            open(sys.argv[1], "wb").write(b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                                        + chunk(b"IDAT", data) + chunk(b"IEND", b""))
            """, path])
    }

    @Test("a named pipe in a folder of images or matched by a glob is skipped (input.skipped), not opened: the run ends")
    func pipeAmongImages() throws {
        let folder = TestFolders.make("pipe-images")
        try Self.png(folder + "/a.png", width: 64, height: 48)
        try Self.png(folder + "/c.png", width: 64, height: 48)
        #expect(mkfifo(folder + "/b.png", 0o644) == 0)
        for input in [folder, folder + "/*.png"] {
            let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", input, "--metrics-interval", "0"], timeout: 30)
            #expect(!r.timedOut, "\(input): the run waited on the pipe")
            let skipped = r.events("input.skipped")
            #expect(skipped.count == 1 && (skipped.first?["path"] as? String)?.hasSuffix("/b.png") == true, "\(input): \(skipped)")
            #expect((skipped.first?["reason"] as? String)?.contains("not a regular file (a named pipe)") == true)
            #expect(r.events("session.stopped").first?["frames"] as? Int == 2, "\(input): \(r.stderr)")
        }
    }

    @Test("an image whose header declares more pixels than --max-image-pixels is skipped before decoding, naming its size; a smaller limit takes a smaller one")
    func decompressionBomb() throws {
        let folder = TestFolders.make("bomb")
        let bomb = folder + "/bomb.png"
        try Self.png(bomb, width: 16000, height: 16000)  // 250 KB on disk, 256 MB of pixels
        let attributes = try FileManager.default.attributesOfItem(atPath: bomb)
        #expect((attributes[.size] as? Int ?? 0) < 1_000_000)
        let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", bomb], timeout: 30)
        #expect(r.exitCode == 3, "\(r.stderr)")  // none of its images could be read
        let reason = try #require(r.events("input.skipped").first?["reason"] as? String, "\(r.stderr)")
        #expect(reason.contains("16000x16000") && reason.contains("--max-image-pixels (120000000)"), "\(reason)")
        // The limit is the user's: a 64x48 image under 3072 pixels is refused, at 3072 it is read.
        let small = folder + "/small.png"
        try Self.png(small, width: 64, height: 48)
        let refused = try CVHostBinary.run(["run", "--plugin", "null", "--input", small, "--max-image-pixels", "3071"])
        #expect(refused.exitCode == 3 && refused.events("input.skipped").count == 1, "\(refused.stderr)")
        let read = try CVHostBinary.run(["run", "--plugin", "null", "--input", small, "--max-image-pixels", "3072"])
        #expect(read.events("input.skipped").isEmpty && read.events("session.stopped").first?["frames"] as? Int == 1, "\(read.stderr)")
        let bad = try CVHostBinary.run(["run", "--plugin", "null", "--input", small, "--max-image-pixels", "-1"])
        #expect(bad.exitCode == 64 && bad.stderr.contains("--max-image-pixels"))
    }

    @Test("--output file:FIFO with no reader says it waits and is refused after --open-timeout (exit 5); with a reader, it gets every line")
    func outputPipe() throws {
        let folder = TestFolders.make("output-pipe")
        let pipe = folder + "/out"
        #expect(mkfifo(pipe, 0o644) == 0)
        let alone = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "--max-frames", "3", "--output", "file:" + pipe,
                                          "--open-timeout", "1"], timeout: 30)
        #expect(!alone.timedOut && alone.exitCode == 5, "\(alone.stderr)")
        #expect(alone.stderr.contains("waiting up to 1.0 s for its reader") && alone.stderr.contains("no reader opened"), "\(alone.stderr)")
        // A reader: cat into a file.
        let copy = folder + "/copy.jsonl"
        let reader = try LoneProcess("/bin/sh", ["-c", "cat '\(pipe)' > '\(copy)'"])
        let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "--max-frames", "3", "--output", "file:" + pipe,
                                      "--output", "-"], timeout: 30)
        reader.wait()
        #expect(r.exitCode == 22, "\(r.stderr)")  // null finds nothing
        let lines = try String(contentsOfFile: copy, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == r.lines.count && lines.last?.contains("session.stopped") == true, "\(lines.count) of \(r.lines.count)")
    }

    @Test("lists too long to parse quickly are refused at once: 1001 items in a config file's list, 2501 arguments")
    func longLists() throws {
        let folder = TestFolders.make("long-lists")
        let config = folder + "/hosts.yaml"
        try (["plugin: null", "input: testsrc", "http: 0", "http-allow-host:"] + (0...1000).map { "  - host\($0).example" })
            .joined(separator: "\n").write(toFile: config, atomically: true, encoding: .utf8)
        let r = try CVHostBinary.run(["run", "--config", config], timeout: 30)
        #expect(r.exitCode == 64 && r.stderr.contains("hosts.yaml:4: http-allow-host: 1001 items: a list has at most 1000"), "\(r.stderr)")
        let many = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc"] + (0..<1249).flatMap { ["--http-allow-host", "h\($0)"] },
                                        timeout: 30)
        #expect(many.exitCode == 64 && many.stderr.contains("2502 arguments: cvhost run takes at most 2500"), "\(many.stderr)")
    }
}
