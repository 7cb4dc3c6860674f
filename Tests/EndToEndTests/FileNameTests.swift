import CVHostTestSupport
import Foundation
import Testing

/// Paths are bytes on Linux: a file or folder whose name is not UTF-8 is read like any other, and
/// named in the output with \xNN escapes (which name it again when given back).
@Suite("file names: not UTF-8, with a colon")
struct FileNameTests {
    static let folder = TestFolders.make("file-names")

    /// Runs cvhost through the shell so that its arguments carry the raw bytes `printf` makes of
    /// `\ooo` escapes (Process would pass them as UTF-8); stdout only.
    static func run(_ arguments: String) throws -> Tool.Outcome {
        try Tool.run("/bin/sh", ["-c", "exec \"$0\" run --plugin barcode -q " + arguments + " 2>/dev/null", CVHostBinary.path],
                     currentDirectory: folder)
    }

    static func images(_ outcome: Tool.Outcome) -> [String] {
        outcome.output.split(separator: "\n").compactMap { line in
            let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return event?["event"] as? String == "result" ? event?["image"] as? String : nil
        }.sorted()
    }

    @Test("a video, a folder and the images in it with names that are not UTF-8 are read; the output names them with \\xNN")
    func notUTF8() throws {
        let made = try Tool.run("/bin/sh", ["-c", """
            mkdir -p "$(printf 'd\\376')" && cp "$1" "$(printf 'v\\377.mp4')" && cp "$1" "$(printf 'k=\\377.mp4')" &&
            cp "$2" "$(printf 'd\\376/caf\\351.png')" && cp "$3" "$(printf 'd\\376/plain.png')"
            """, "sh", BarcodeFixtures.demoVideo, try BarcodeFixtures.path("ean13.png"), try BarcodeFixtures.path("code128.png")],
            currentDirectory: Self.folder)
        #expect(made.status == 0, "\(made.output)")

        let video = try Self.run("--input \"$(printf 'v\\377.mp4')\" --max-frames 1")
        #expect(video.status == 0)
        #expect(video.output.contains(#""source":"v\\xff.mp4""#), "\(video.output.prefix(300))")

        // An existing file whose name looks like NAME=... is that file.
        let named = try Self.run("--input \"$(printf 'k=\\377.mp4')\" --max-frames 1")
        #expect(named.output.contains(#""source":"k=\\xff.mp4""#), "\(named.output.prefix(300))")

        let images = try Self.run("--input \"$(printf 'd\\376')\"")
        #expect(images.status == 0)
        #expect(Self.images(images) == [#"d\xfe/caf\xe9.png"#, #"d\xfe/plain.png"#], "the image is read, not skipped")

        // The escaped text names the same files: given back (as a config file could), and in a glob.
        let again = try Self.run(#"--input 'd\xfe/caf\xe9.png'"#)
        #expect(Self.images(again) == [#"d\xfe/caf\xe9.png"#])
        let glob = try Self.run(#"--input 'd\xfe/c*.png'"#)
        #expect(Self.images(glob) == [#"d\xfe/caf\xe9.png"#])

        let missing = try Tool.run("/bin/sh", ["-c", "exec \"$0\" run --plugin barcode --input \"$(printf 'n\\377.mp4')\" 2>&1",
                                              CVHostBinary.path], currentDirectory: Self.folder)
        #expect(missing.status == 3 && missing.output.contains(#"input n\xff.mp4 not found"#), "\(missing.output)")
    }

    @Test("a file whose name has a colon is a file, not an FFmpeg protocol")
    func colon() throws {
        let path = Self.folder + "/cam1:2024.mp4"
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: BarcodeFixtures.demoVideo, toPath: path)
        let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", path, "--max-frames", "1", "-q"])
        #expect(r.exitCode == 0 && !r.events("result").isEmpty, "\(r.stderr)")
    }
}
