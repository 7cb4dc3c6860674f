import CVHostCore
import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostV4L2

/// The decoder a camera's MJPEG frames go through (V4L2Stream hands it each buffer's bytes),
/// fed with JPEGs made by a real encoder (FFmpeg's mjpeg), whole and damaged.
@Suite("MJPEG frames decoded by cvhost")
struct MJPEGDecoderTests {
    static let folder = TestFolders.make("mjpeg")

    /// A 640x480 JPEG of testsrc2 in FFmpeg's `pixFmt` (yuvj422p as most webcams send, yuvj420p, gray).
    static func jpeg(_ pixFmt: String, size: String = "640x480") throws -> Data {
        let out = folder + "/\(pixFmt)-\(size).jpg"
        if !FileManager.default.fileExists(atPath: out) {
            try Tool.check("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(size)", "-frames:v", "1",
                                      "-c:v", "mjpeg", "-pix_fmt", pixFmt, "-q:v", "3", out])
        }
        return try Data(contentsOf: URL(fileURLWithPath: out))
    }

    /// The JPEG's planes as FFmpeg's own command line decodes them (packed, in its native format).
    static func ffmpegPlanes(_ pixFmt: String) throws -> Data {
        let out = folder + "/\(pixFmt).raw"
        try Tool.check("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-i", folder + "/\(pixFmt)-640x480.jpg",
                                  "-f", "rawvideo", "-pix_fmt", pixFmt, out])
        return try Data(contentsOf: URL(fileURLWithPath: out))
    }

    static func decode(_ d: MJPEGDecoder, _ bytes: Data) -> MJPEGDecoder.Outcome {
        bytes.withUnsafeBytes { d.decode($0) }
    }

    static func plane(_ pb: PixelBuffer, _ i: Int) -> Data {
        let p = pb.planes[i]
        var out = Data()
        for row in 0..<p.rows { out.append(Data(bytes: p.base + row * p.bytesPerRow, count: p.samplesPerRow)) }
        return out
    }

    @Test("4:2:2 (webcams) is read as I420 without a copy: luma exact, every other chroma row; full range BT.601")
    func yuv422() throws {
        let d = try MJPEGDecoder(width: 640, height: 480, device: "test")
        guard case .frame(let pb) = MJPEGDecoderTests.decode(d, try MJPEGDecoderTests.jpeg("yuvj422p")) else {
            Issue.record("a whole JPEG was refused")
            return
        }
        #expect(pb.format == .i420 && pb.width == 640 && pb.height == 480)
        #expect(pb.colorimetry == .jpeg)
        let theirs = try MJPEGDecoderTests.ffmpegPlanes("yuvj422p")
        #expect(MJPEGDecoderTests.plane(pb, 0) == theirs.prefix(640 * 480))
        // FFmpeg's 4:2:2 chroma: 480 rows of 320; cvhost's: rows 0, 2, 4, ... of them.
        for (i, start) in [(1, 640 * 480), (2, 640 * 480 + 320 * 480)] {
            var even = Data()
            for row in stride(from: 0, to: 480, by: 2) { even.append(theirs[(start + row * 320)..<(start + row * 320 + 320)]) }
            #expect(MJPEGDecoderTests.plane(pb, i) == even, "chroma plane \(i)")
        }
    }

    @Test("4:2:0 JPEGs: planes exactly as FFmpeg decodes them; 4:4:4 converted to I420 keeping its luma and range")
    func yuv420And444() throws {
        let d = try MJPEGDecoder(width: 640, height: 480, device: "test")
        guard case .frame(let pb) = MJPEGDecoderTests.decode(d, try MJPEGDecoderTests.jpeg("yuvj420p")) else {
            Issue.record("a whole JPEG was refused")
            return
        }
        let theirs = try MJPEGDecoderTests.ffmpegPlanes("yuvj420p")
        #expect(MJPEGDecoderTests.plane(pb, 0) + MJPEGDecoderTests.plane(pb, 1) + MJPEGDecoderTests.plane(pb, 2) == theirs)
        guard case .frame(let full) = MJPEGDecoderTests.decode(d, try MJPEGDecoderTests.jpeg("yuvj444p")) else {
            Issue.record("a 4:4:4 JPEG was refused")
            return
        }
        let luma = try MJPEGDecoderTests.ffmpegPlanes("yuvj444p").prefix(640 * 480)
        #expect(full.format == .i420 && full.colorimetry == .jpeg && MJPEGDecoderTests.plane(full, 0) == luma)
    }

    @Test("damaged frames are refused, never a crash; the next whole frame decodes")
    func damaged() throws {
        let d = try MJPEGDecoder(width: 640, height: 480, device: "test")
        let whole = try MJPEGDecoderTests.jpeg("yuvj422p")
        var scrambled = whole
        // Entropy-coded data overwritten in the middle of the picture.
        for i in stride(from: whole.count / 2, to: whole.count / 2 + 400, by: 1) { scrambled[i] = UInt8(truncatingIfNeeded: i &* 97) }
        var endless = whole
        endless[endless.count - 1] = 0x00  // EOI damaged
        let refused: [(String, Data)] = [
            ("truncated", whole.prefix(whole.count * 2 / 3)),
            ("truncated just before its end marker", whole.prefix(whole.count - 2)),
            ("no end marker", endless),
            ("scrambled", scrambled),
            ("empty", Data()),
            ("not a JPEG", Data(repeating: 0x55, count: 4096)),
            ("another size", try MJPEGDecoderTests.jpeg("yuvj422p", size: "320x240")),
        ]
        for (name, bytes) in refused {
            guard case .corrupt = MJPEGDecoderTests.decode(d, bytes) else {
                Issue.record("\(name): decoded")
                continue
            }
            guard case .frame = MJPEGDecoderTests.decode(d, whole) else {
                Issue.record("after \(name): a whole frame was refused")
                continue
            }
        }
        // Zero bytes after the end marker (some cameras pad their frames) are fine.
        guard case .frame = MJPEGDecoderTests.decode(d, whole + Data(count: 1000)) else {
            Issue.record("a padded frame was refused")
            return
        }
    }
}
