import CVHostTestSupport
import Foundation
import Testing

/// `--output`: several outputs at once, files with rotation, and every refusal.
@Suite("outputs", .serialized)
struct OutputTests {
    static let folder = NSTemporaryDirectory() + "cvhost-output-tests-\(getpid())"

    @Test("file: and - together get the same lines, byte for byte; a second run appends")
    func fileAndStdout() throws {
        try FileManager.default.createDirectory(atPath: OutputTests.folder, withIntermediateDirectories: true)
        let path = OutputTests.folder + "/results.jsonl"
        try? FileManager.default.removeItem(atPath: path)
        // No periodic metrics: a slow run (a loaded machine) would write one more (CI found 244 lines).
        let args = ["run", "--plugin", "barcode", "--input", BarcodeFixtures.demoVideo, "--output", "file:" + path, "--output", "-",
                    "--metrics-interval", "0"]
        let first = try CVHostBinary.run(args)
        #expect(first.exitCode == 0, "\(first.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == first.stdout)
        #expect(first.lines.count == 243)
        let metrics = try #require(first.events("metrics").last)
        let outputs = try #require(metrics["output"] as? [[String: Any]])
        #expect(outputs.map { $0["output"] as? String } == ["stdout", "file:" + path])
        let second = try CVHostBinary.run(args)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == first.stdout + second.stdout)
    }

    @Test("file:PATH?max_mb=1&keep=2 rotates: PATH.2, PATH.1 and PATH hold the last lines in order, none over 1 MiB")
    func rotation() throws {
        let dir = OutputTests.folder + "/rotation"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let path = dir + "/r.jsonl"
        // About 3.5 MB of result lines.
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=4", "--input", "testsrc:64x48:unpaced", "--max-frames", "3500",
                                      "--output", "file:\(path)?max_mb=1&keep=2", "--output", "-"], timeout: 120)
        #expect(r.exitCode == 0, "\(r.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        #expect(files == ["r.jsonl", "r.jsonl.1", "r.jsonl.2"])
        var kept = ""
        for name in ["r.jsonl.2", "r.jsonl.1", "r.jsonl"] {
            let text = try String(contentsOfFile: dir + "/" + name, encoding: .utf8)
            #expect(text.utf8.count <= 1_048_576 && text.hasSuffix("\n"))
            kept += text
        }
        #expect(r.stdout.utf8.count > 3 * 1_048_576)
        #expect(r.stdout.hasSuffix(kept) && kept.utf8.count > 2 * 1_048_576)
    }

    @Test("refused --output values: exit 64 (or 5 for a file that cannot be opened), one line naming it, no password shown")
    func refusals() throws {
        let src = ["run", "--plugin", "null", "--input", "testsrc:64x48:unpaced", "--max-frames", "1"]
        for (output, code, mention) in [
            ("ftp://host/x", 64, "write -, file:PATH, mqtt://"),
            ("mqtt://user:hunter2@broker:70000/cvhost", 64, "port must be a number from 1 to 65535"),
            ("mqtt://broker/cvhost?qos=3", 64, "qos=3"),
            ("mqtt://broker/cvhost?colour=red", 64, "has no option 'colour'"),
            ("mqtt://broker/a/+/b", 64, "may not contain +, #"),
            ("mqtt://broker/cvhost?ca=/x.pem", 64, "ca= is for mqtts://"),
            ("mqtt://", 64, "name the broker's host"),
            ("file:", 64, "needs a path"),
            ("file:/x?max_mb=-1", 64, "max_mb=-1"),
            ("file:/nonexistent-dir/r.jsonl", 5, "cannot open /nonexistent-dir/r.jsonl for --output: No such file or directory"),
            ("kafka://broker:9092", 64, "name the topic after the brokers"),
            ("kafka://u:hunter2@broker/t?compression=brotli", 64, "compression=brotli: write none, gzip"),
            ("kafka://broker/t?sasl=plain", 64, "sasl= needs a user"),
            ("kafka://broker/t?ca=/x.pem", 64, "ca= is for tls=true"),
            ("kafka://broker,:9093/t", 64, "name the broker's host"),
            ("nats://u:hunter2@server/a.*", 64, "the subject 'a.*' must be tokens"),
            ("nats://server/x?stream=a.b", 64, "stream=a.b"),
            ("nats://a,b/x", 64, "name one server"),
            ("mqtt://broker/x?spool_mb=5", 64, "name its folder with spool=DIR"),
            ("file:/tmp/r.jsonl?spool=/tmp/s", 64, "spool= is for broker outputs"),
            ("file:/tmp/r.jsonl?required=true", 64, "required= is for broker outputs (a file that cannot be opened already stops the run, exit 5)"),
            ("nats://127.0.0.1:1/x?spool=/proc/cvhost-spool", 5, "cannot make the spool folder /proc/cvhost-spool"),
        ] as [(String, Int32, String)] {
            let r = try CVHostBinary.run(src + ["--output", output])
            #expect(r.exitCode == code && r.stderr.contains(mention), "\(output): exit \(r.exitCode), \(r.stderr)")
            #expect(r.stdout.isEmpty && !r.stderr.contains("hunter2"), "\(output)")
        }
    }
}
