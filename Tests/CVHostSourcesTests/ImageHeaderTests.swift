import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostSources

/// The picture size an image file declares, read without decoding it: what a decompression bomb
/// is refused by (StillImageStream).
@Suite("image headers")
struct ImageHeaderTests {
    static let folder = TestFolders.make("image-headers")

    @Test("the size FFmpeg's encoders wrote, read from PNG, JPEG (its frame header after the APP segments), GIF, BMP, WebP, PPM and PGM headers",
          arguments: ["png", "jpg", "gif", "bmp", "webp", "ppm", "pgm"])
    func sizes(format: String) throws {
        let path = Self.folder + "/image-37x23.\(format)"
        try Tool.check("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=38x24", "-vf", "scale=37:23", "-frames:v", "1"]
                       + (format == "jpg" ? ["-pix_fmt", "yuvj420p"] : []) + [path])
        let size = try #require(ImageHeader.size(ofFile: path), "\(format)")
        #expect(size.width == 37 && size.height == 23, "\(format): \(size)")
    }

    @Test("what is not a known header is nil, not a guess")
    func unknown() {
        #expect(ImageHeader.size(of: Array("not an image at all".utf8)) == nil)
        #expect(ImageHeader.size(of: [0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x02]) == nil, "scan data before any frame header")
        #expect(ImageHeader.size(of: [0x89] + Array("PNG\r\n".utf8)) == nil, "cut short")
    }

    @Test("a JPEG or PNG cut short is told from a whole one (FFmpeg decodes it without a word, the rest gray)", arguments: ["jpg", "png"])
    func cutShort(format: String) throws {
        let whole = Self.folder + "/whole.\(format)", cut = Self.folder + "/cut.\(format)"
        try Tool.check("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240", "-frames:v", "1", whole])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: whole))
        try bytes.prefix(bytes.count * 2 / 3).write(to: URL(fileURLWithPath: cut))
        #expect(!ImageHeader.isCutShort(whole) && ImageHeader.isCutShort(cut), "\(format)")
    }
}
