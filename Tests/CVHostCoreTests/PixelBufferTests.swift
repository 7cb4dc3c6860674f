import Testing
@testable import CVHostCore

@Suite("Pixel buffers and conversions")
struct PixelBufferTests {
    /// A width x height RGB image with a known gradient.
    static func rgbGradient(width: Int, height: Int) -> PixelBuffer {
        PixelBuffer.allocate(format: .rgb24, width: width, height: height, colorimetry: .jpeg) { planes, strides in
            let p = planes[0].assumingMemoryBound(to: UInt8.self)
            for y in 0..<height {
                for x in 0..<width {
                    let o = p + y * strides[0] + x * 3
                    o[0] = UInt8(x * 255 / max(1, width - 1))
                    o[1] = UInt8(y * 255 / max(1, height - 1))
                    o[2] = 128
                }
            }
        }
    }

    static func byte(_ pb: PixelBuffer, plane: Int, x: Int, y: Int) -> UInt8 {
        let p = pb.planes[plane]
        return p.base.load(fromByteOffset: y * p.bytesPerRow + x, as: UInt8.self)
    }

    @Test("gray8 from a luma-first format is the Y plane itself, not a copy")
    func grayIsAView() {
        let i420 = PixelBufferTests.rgbGradient(width: 64, height: 48).converted(to: .i420)
        let gray = i420.converted(to: .gray8)
        #expect(gray.format == .gray8)
        #expect(gray.planes[0].base == i420.planes[0].base)
        #expect(i420.cachedConversionCount == 0)
    }

    @Test("a conversion is made once per format, however many consumers ask")
    func conversionIsCached() {
        let rgb = PixelBufferTests.rgbGradient(width: 32, height: 32)
        let a = rgb.converted(to: .i420)
        let b = rgb.converted(to: .i420)
        #expect(a === b)
        _ = rgb.converted(to: .bgr24)
        #expect(rgb.cachedConversionCount == 2)
    }

    @Test("conversions keep the picture", arguments: [PixelFormat.i420, .nv12, .yuyv, .bgr24, .gray8])
    func roundTrip(through format: PixelFormat) {
        // Odd sizes exercise the chroma rounding.
        let rgb = PixelBufferTests.rgbGradient(width: 33, height: 17)
        let back = rgb.converted(to: format).converted(to: .rgb24)
        #expect(back.width == 33 && back.height == 17)
        var worst = 0
        for y in 0..<17 {
            for x in 0..<33 {
                for c in 0..<3 where format != .gray8 {
                    let a = Int(PixelBufferTests.byte(rgb, plane: 0, x: x * 3 + c, y: y))
                    let b = Int(PixelBufferTests.byte(back, plane: 0, x: x * 3 + c, y: y))
                    worst = max(worst, abs(a - b))
                }
            }
        }
        // 4:2:0 and 4:2:2 chroma on a smooth gradient: within a few levels.
        #expect(worst <= 24, "largest channel error \(worst) through \(format)")
    }

    @Test("luma of grey RGB equals the grey level")
    func lumaOfGrey() {
        let grey = PixelBuffer.allocate(format: .rgb24, width: 4, height: 2, colorimetry: .jpeg) { planes, strides in
            for y in 0..<2 { (planes[0] + y * strides[0]).initializeMemory(as: UInt8.self, repeating: 200, count: 12) }
        }
        let gray = grey.converted(to: .gray8)
        #expect(PixelBufferTests.byte(gray, plane: 0, x: 3, y: 1) == 200)
    }

    @Test("plane layouts follow the formats")
    func layouts() {
        #expect(PixelFormat.i420.planeLayout(width: 5, height: 3).map(\.rows) == [3, 2, 2])
        #expect(PixelFormat.nv12.planeLayout(width: 5, height: 3).map(\.rowBytes) == [5, 6])
        #expect(PixelFormat.yuyv.planeLayout(width: 5, height: 3).map(\.rowBytes) == [12])
        #expect(PixelFormat.i420.fourCCString == "YU12")
        #expect(PixelFormat(name: "GRAY8") == .gray8)
    }
}
