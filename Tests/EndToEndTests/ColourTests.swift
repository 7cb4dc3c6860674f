import CVHostTestSupport
import Foundation
import Testing

/// Frames say the range and matrix their source states, plugins read them in cvhost_frame, and
/// RGB made for a plugin is within 2 levels of the exact conversion of the same decoded frame with them.
@Suite("Colour range and matrix, from the source to the plugin")
struct ColourTests {
    static let folder = PluginFixtures.makeFolder()
    static let source = PluginFixtures.packageRoot + "/Tests/Fixtures/frame-probe-plugin.c"

    /// Builds the probe plugin asking for `format` (a CVHOST_PIXEL_FORMAT_* name's tail: RGB24, GRAY8).
    static func probe(_ format: String) throws -> String {
        let name = "probe-\(format.lowercased())"
        try PluginFixtures.build(name: name, defines: ["PROBE_FORMAT=CVHOST_PIXEL_FORMAT_\(format)"], source: source, in: folder)
        return name
    }

    /// What the probe saw of each frame: (range, matrix).
    static func colours(_ r: CommandResult) -> [(Int, Int)] {
        r.events("result").compactMap { $0["data"] as? [String: Any] }.map { ($0["color_range"] as? Int ?? -9, $0["color_matrix"] as? Int ?? -9) }
    }

    static func run(_ plugin: String, _ input: String, dump: String? = nil) throws -> CommandResult {
        let spec = plugin + (dump.map { ":dump=\($0)" } ?? "")
        let r = try CVHostBinary.run(["run", "--plugin", spec, "--input", input, "--max-frames", "3", "--metrics-interval", "0"],
                                     environment: ["CVHOST_PLUGIN_PATH": folder])
        #expect(r.exitCode == 0, "\(r.stderr)")
        return r
    }

    @Test("H.264 tagged BT.709 limited range: frames say so, and RGB is the exact conversion for that range and matrix (within 2 levels)")
    func taggedVideo() throws {
        let clip = try MediaFixtures.make("bt709.mp4", MediaFixtures.pattern + [
            "-frames:v", "3", "-c:v", "libx264", "-pix_fmt", "yuv420p",
            "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709", "-color_range", "tv"])
        let dump = ColourTests.folder + "/bt709.rgb"
        let r = try ColourTests.run(try ColourTests.probe("RGB24"), clip, dump: dump)
        // RGB frames: full range, no matrix (CVHOST_COLOR_RANGE_FULL = 1, CVHOST_COLOR_MATRIX_NONE = 0).
        #expect(ColourTests.colours(r).count == 3 && ColourTests.colours(r).allSatisfy { $0 == (1, 0) })
        // Against the exact conversion of the same decoded frame (FFmpeg's), with BT.709 limited range.
        let decoded = ColourTests.folder + "/bt709.yuv"
        try Tool.check("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-i", clip, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "yuv420p", decoded])
        let exact = ColourReference.rgb(try Data(contentsOf: URL(fileURLWithPath: decoded)), .i420, width: 320, height: 240, limited: true,
                                        kr: 0.2126, kb: 0.0722)
        let mine = try Data(contentsOf: URL(fileURLWithPath: dump))
        #expect(mine.count == 320 * 240 * 3)
        let difference = ColourReference.difference(mine, exact)
        #expect(difference.max <= 2, "\(difference)")
        // The same frames in grey: the luma as it is, with the source's range and matrix (limited = 2, BT.709 = 2).
        let grey = try ColourTests.run(try ColourTests.probe("GRAY8"), clip)
        let greys = ColourTests.colours(grey)
        #expect(greys.count == 3 && greys.allSatisfy { $0 == (2, 2) }, "\(greys)")
    }

    @Test("what a source leaves unsaid: limited BT.601 for SD video, full range BT.601 for MJPEG")
    func defaults() throws {
        let grey = try ColourTests.probe("GRAY8")
        // Three frames each (--max-frames 3): an empty list would pass allSatisfy.
        let video = ColourTests.colours(try ColourTests.run(grey, try MediaFixtures.h264()))
        #expect(video.count == 3 && video.allSatisfy { $0 == (2, 1) }, "\(video)")
        let mjpeg = ColourTests.colours(try ColourTests.run(grey, try MediaFixtures.mjpegAVI()))
        #expect(mjpeg.count == 3 && mjpeg.allSatisfy { $0 == (1, 1) }, "\(mjpeg)")
    }
}
