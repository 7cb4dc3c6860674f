import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostCore

/// Conversions honour each frame's range and matrix: YUV to RGB within 2 levels of the exact
/// conversion, the others exactly what FFmpeg's own command-line scaler gives for the same input,
/// range, matrix and flags.
@Suite("Colour: range and matrix in conversions")
struct ColourConversionTests {
    static let width = 322, height = 242
    static let folder = TestFolders.make("colour")
    static let flags = "bilinear+accurate_rnd+full_chroma_int+full_chroma_inp"

    /// testsrc2 as raw frames of FFmpeg's `pixFmt` (322x242 unless said).
    static func raw(_ pixFmt: String, width: Int = width, height: Int = height) throws -> Data {
        let out = folder + "/in-\(width)x\(height).\(pixFmt)"
        if !FileManager.default.fileExists(atPath: out) {
            // Written aside, under a name of this writer's own, and renamed whole: parallel tests may
            // make the same file at once, and read it. testsrc2 makes even sizes only: an odd one is
            // cropped out of the next even one.
            let even = "\(width + width % 2)x\(height + height % 2)"
            let part = out + ".\(UUID().uuidString).part"
            try Tool.check("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(even)",
                                      "-vf", "format=rgb24,crop=\(width):\(height):0:0", "-frames:v", "1", "-pix_fmt", pixFmt,
                                      "-f", "rawvideo", part])
            _ = rename(part, out)
        }
        return try Data(contentsOf: URL(fileURLWithPath: out))
    }

    /// What `ffmpeg -vf scale=...` makes of the same raw input.
    static func ffmpeg(_ inFmt: String, _ outFmt: String, _ scale: String) throws -> Data {
        // A name of this call's own: parallel tests may ask for the same conversion at once.
        let out = folder + "/\(inFmt)-\(outFmt)-\(UUID().uuidString).raw"
        defer { try? FileManager.default.removeItem(atPath: out) }
        try Tool.check("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", inFmt, "-s", "\(width)x\(height)",
                                  "-i", folder + "/in-\(width)x\(height).\(inFmt)", "-vf", "scale=flags=\(flags):\(scale),format=\(outFmt)",
                                  "-f", "rawvideo", out])
        return try Data(contentsOf: URL(fileURLWithPath: out))
    }

    /// Packed planes (as FFmpeg writes raw frames) as a pixel buffer.
    static func buffer(_ data: Data, _ format: PixelFormat, _ colorimetry: Colorimetry, width: Int = width, height: Int = height) -> PixelBuffer {
        let layout = format.planeLayout(width: width, height: height)
        return PixelBuffer.allocate(format: format, width: width, height: height, colorimetry: colorimetry) { planes, strides in
            data.withUnsafeBytes { src in
                var offset = 0
                for (i, g) in layout.enumerated() {
                    for row in 0..<g.rows {
                        (planes[i] + row * strides[i]).copyMemory(from: src.baseAddress! + offset, byteCount: g.rowBytes)
                        offset += g.rowBytes
                    }
                }
            }
        }
    }

    /// The buffer's planes packed, as FFmpeg writes raw frames.
    static func packed(_ pb: PixelBuffer) -> Data {
        var out = Data()
        for (i, g) in pb.format.planeLayout(width: pb.width, height: pb.height).enumerated() {
            for row in 0..<g.rows { out.append(Data(bytes: pb.planes[i].base + row * pb.planes[i].bytesPerRow, count: g.rowBytes)) }
        }
        return out
    }

    static func differing(_ a: Data, _ b: Data) -> Int {
        guard a.count == b.count else { return max(a.count, b.count) }
        return zip(a, b).reduce(0) { $0 + ($1.0 != $1.1 ? 1 : 0) }
    }

    struct Case: Sendable, CustomStringConvertible {
        let source: PixelFormat, sourceFF: String, colorimetry: Colorimetry, target: PixelFormat, targetFF: String, scale: String
        var description: String { "\(source) \(colorimetry) -> \(target)" }
    }

    static let cases = [
        Case(source: .rgb24, sourceFF: "rgb24", colorimetry: .jpeg, target: .i420, targetFF: "yuv420p",
             scale: "out_range=pc:out_color_matrix=bt601"),
    ]

    @Test("conversions other than YUV to RGB are pixel-exact with FFmpeg's scaler for the frame's range and matrix", arguments: cases)
    func exact(_ c: Case) throws {
        let source = ColourConversionTests.buffer(try ColourConversionTests.raw(c.sourceFF), c.source, c.colorimetry)
        let mine = source.converted(to: c.target)
        let theirs = try ColourConversionTests.ffmpeg(c.sourceFF, c.targetFF, c.scale)
        #expect(ColourConversionTests.differing(ColourConversionTests.packed(mine), theirs) == 0)
        #expect(mine.colorimetry.range == .full)
    }

    struct Accuracy: Sendable, CustomStringConvertible {
        let source: PixelFormat, sourceFF: String, layout: ColourReference.Layout, colorimetry: Colorimetry, target: PixelFormat
        let width: Int, height: Int
        var description: String { "\(source) \(width)x\(height) \(colorimetry) -> \(target)" }
    }

    static let accuracies = [
        Accuracy(source: .i420, sourceFF: "yuv420p", layout: .i420, colorimetry: Colorimetry(range: .limited, matrix: .bt709),
                 target: .rgb24, width: 322, height: 242),
        Accuracy(source: .i420, sourceFF: "yuv420p", layout: .i420, colorimetry: Colorimetry(range: .limited, matrix: .bt709),
                 target: .bgr24, width: 323, height: 243),
        Accuracy(source: .i420, sourceFF: "yuv420p", layout: .i420, colorimetry: Colorimetry(range: .limited, matrix: .bt2020),
                 target: .rgb24, width: 322, height: 242),
        Accuracy(source: .i420, sourceFF: "yuv420p", layout: .i420, colorimetry: .jpeg, target: .bgr24, width: 322, height: 242),
        Accuracy(source: .nv12, sourceFF: "nv12", layout: .nv12, colorimetry: .jpeg, target: .bgr24, width: 322, height: 242),
        Accuracy(source: .nv12, sourceFF: "nv12", layout: .nv12, colorimetry: Colorimetry(range: .limited, matrix: .bt601),
                 target: .rgb24, width: 323, height: 243),
        Accuracy(source: .yuyv, sourceFF: "yuyv422", layout: .yuyv, colorimetry: Colorimetry(range: .limited, matrix: .bt601),
                 target: .rgb24, width: 322, height: 242),
        Accuracy(source: .yuyv, sourceFF: "yuyv422", layout: .yuyv, colorimetry: Colorimetry(range: .full, matrix: .bt709),
                 target: .bgr24, width: 322, height: 242),
    ]

    @Test("YUV to RGB is within 2 levels of the exact conversion for the frame's range and matrix, bilinear chroma", arguments: accuracies)
    func accurate(_ c: Accuracy) throws {
        let raw = try Self.raw(c.sourceFF, width: c.width, height: c.height)
        let mine = Self.buffer(raw, c.source, c.colorimetry, width: c.width, height: c.height).converted(to: c.target)
        let (kr, kb) = c.colorimetry.matrix.lumaWeights
        let exact = ColourReference.rgb(raw, c.layout, width: c.width, height: c.height, limited: c.colorimetry.range == .limited, kr: kr, kb: kb)
        let difference = ColourReference.difference(Self.packed(mine), exact, bgr: c.target == .bgr24)
        #expect(difference.max <= 2 && difference.mean < 0.5, "\(difference)")
        #expect(mine.colorimetry == Colorimetry(range: .full, matrix: c.colorimetry.matrix))
        // The reference is itself checked: swscale's accurate path agrees with it on average (not at
        // edges, and not at odd sizes, where it sites chroma by the planes' size ratio: mean 2 levels).
        guard c.width % 2 == 0 && c.height % 2 == 0 else { return }
        let swscale = PixelConverter.swscale(Self.buffer(raw, c.source, c.colorimetry, width: c.width, height: c.height), to: c.target,
                                             colorimetry: mine.colorimetry)
        #expect(ColourReference.difference(Self.packed(swscale), exact, bgr: c.target == .bgr24).mean < 1)
    }

    @Test("frames scaled and converted in one pass are pixel-exact with FFmpeg's scale (and pad, for a letterbox)")
    func scaled() throws {
        let source = Self.buffer(try Self.raw("yuv420p"), .i420, Colorimetry(range: .limited, matrix: .bt709))
        let range = "in_range=tv:in_color_matrix=bt709:out_range=pc"
        // 322x242 letterboxed into 160x160: gain 160/322, 160x120, 20 rows of pad above (round(20 - 0.1)) and below.
        let letterbox = FrameScaling(width: 160, height: 160, mode: .letterbox(pad: 114))
        #expect(letterbox.content(sourceWidth: Self.width, sourceHeight: Self.height) == .init(x: 0, y: 20, width: 160, height: 120))
        let boxed = source.scaled(letterbox, to: .rgb24)
        #expect(boxed.width == 160 && boxed.height == 160)
        let theirs = try Self.ffmpeg("yuv420p", "rgb24", "w=160:h=120:\(range),pad=160:160:0:20:color=0x727272")
        #expect(Self.differing(Self.packed(boxed), theirs) == 0)
        #expect(source.scaled(letterbox, to: .rgb24) === boxed, "made once, cached")
        let stretched = source.scaled(FrameScaling(width: 100, height: 50, mode: .stretch), to: .bgr24)
        #expect(Self.differing(Self.packed(stretched), try Self.ffmpeg("yuv420p", "bgr24", "w=100:h=50:\(range)")) == 0)
        // Padding in YUV: that grey's luma in the frame's range, neutral chroma; offsets even.
        let yuv = source.scaled(FrameScaling(width: 161, height: 161, mode: .letterbox(pad: 114)), to: .i420)
        // Limited range: 16 + 114 x 219/255 = 113.9.
        #expect(yuv.planes[0].base.load(as: UInt8.self) == 114 && yuv.planes[1].base.load(as: UInt8.self) == 128)
        #expect(FrameScaling(width: 161, height: 161, mode: .letterbox(pad: 0)).content(sourceWidth: Self.width, sourceHeight: Self.height,
                                                                                        evenOffsets: true).y % 2 == 0)
    }

    @Test("limited-range YUV is not read as full range: black and white come out 0 and 255")
    func limitedRangeLevels() {
        // Y = 16 (black) and 235 (white) with neutral chroma, limited range.
        let pb = PixelBuffer.allocate(format: .i420, width: 2, height: 2, colorimetry: Colorimetry(range: .limited, matrix: .bt601)) { p, s in
            p[0].storeBytes(of: 16, toByteOffset: 0, as: UInt8.self)
            p[0].storeBytes(of: 235, toByteOffset: 1, as: UInt8.self)
            p[0].storeBytes(of: 16, toByteOffset: s[0], as: UInt8.self)
            p[0].storeBytes(of: 235, toByteOffset: s[0] + 1, as: UInt8.self)
            p[1].storeBytes(of: 128, as: UInt8.self)
            p[2].storeBytes(of: 128, as: UInt8.self)
        }
        let rgb = pb.converted(to: .rgb24)
        #expect(PixelBufferTests.byte(rgb, plane: 0, x: 0, y: 0) == 0 && PixelBufferTests.byte(rgb, plane: 0, x: 3, y: 0) == 255)
        // The same samples said to be full range keep their levels.
        let full = PixelBuffer.allocate(format: .i420, width: 2, height: 2, colorimetry: .jpeg) { p, s in
            for row in 0..<2 { (p[0] + row * s[0]).initializeMemory(as: UInt8.self, repeating: 16, count: 2) }
            p[1].storeBytes(of: 128, as: UInt8.self)
            p[2].storeBytes(of: 128, as: UInt8.self)
        }
        #expect(PixelBufferTests.byte(full.converted(to: .rgb24), plane: 0, x: 0, y: 0) == 16)
    }
}
