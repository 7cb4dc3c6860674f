import Testing
@testable import CVHostCore

/// Mirrored and rotated frames (a connection's isVideoMirrored and videoRotationAngle).
@Suite("Mirrored and rotated pixel buffers")
struct PixelOrientationTests {
    static let orientations = [false, true].flatMap { m in VideoOrientation.rotationAngles.map { VideoOrientation(isMirrored: m, rotationAngle: $0) } }

    /// A buffer whose every byte differs from its neighbours, in any format.
    static func pattern(_ format: PixelFormat, width: Int, height: Int) -> PixelBuffer {
        PixelBuffer.allocate(format: format, width: width, height: height, colorimetry: .jpeg) { planes, strides in
            let layout = format.planeLayout(width: width, height: height)
            for (i, plane) in planes.enumerated() {
                let p = plane.assumingMemoryBound(to: UInt8.self)
                for y in 0..<layout[i].rows {
                    for x in 0..<layout[i].rowBytes { p[y * strides[i] + x] = UInt8(truncatingIfNeeded: 17 + 29 * x + 53 * y + 97 * i) }
                }
            }
        }
    }

    /// Where destination pixel (x, y) comes from in a width x height source: mirror, then turn clockwise.
    static func source(of x: Int, _ y: Int, width: Int, height: Int, _ o: VideoOrientation) -> (Int, Int) {
        let (u, v): (Int, Int) = switch o.rotationAngle {
        case 90: (y, height - 1 - x)
        case 180: (width - 1 - x, height - 1 - y)
        case 270: (width - 1 - y, x)
        default: (x, y)
        }
        return (o.isMirrored ? width - 1 - u : u, v)
    }

    /// Each pixel of `turned` equals the source pixel it should come from, rendered in `format`
    /// (gray8: one sample a pixel; rgb24: three). Returns the number of samples that differ.
    static func wrongSamples(_ src: PixelBuffer, _ turned: PixelBuffer, _ o: VideoOrientation, as format: PixelFormat) -> Int {
        let a = src.converted(to: format), b = turned.converted(to: format)
        let n = format == .gray8 ? 1 : 3
        var wrong = 0
        for y in 0..<b.height {
            for x in 0..<b.width {
                let (sx, sy) = source(of: x, y, width: src.width, height: src.height, o)
                for c in 0..<n where PixelBufferTests.byte(b, plane: 0, x: x * n + c, y: y) != PixelBufferTests.byte(a, plane: 0, x: sx * n + c, y: sy) {
                    wrong += 1
                }
            }
        }
        return wrong
    }

    static func expectTurned(_ src: PixelBuffer, _ turned: PixelBuffer, _ o: VideoOrientation) {
        #expect(turned.width == (o.swapsSides ? src.height : src.width) && turned.height == (o.swapsSides ? src.width : src.height))
        #expect(wrongSamples(src, turned, o, as: .gray8) == 0, "\(src.format) \(o): luma")
        if src.format == .i420 || src.format == .nv12 {
            // Chroma is compared as it is stored, in I420 (RGB would interpolate it, and the
            // interpolation's siting is not symmetric under mirroring).
            #expect(wrongI420Chroma(src, turned, o) == 0, "\(src.format) \(o): chroma")
        } else if src.format == .yuyv {
            // Rendering YUYV as RGB goes through 4:2:0 (chroma of every other row), which a vertical
            // flip changes; so its chroma is checked as it is stored: one U, V pair per two pixels.
            // (A quarter turn goes through I420 on purpose; its chroma is resampled.)
            if !o.swapsSides { #expect(wrongYUYVChroma(src, turned, o) == 0, "yuyv \(o): chroma") }
        } else {
            #expect(wrongSamples(src, turned, o, as: .rgb24) == 0, "\(src.format) \(o): colour")
        }
    }

    /// Chroma samples of a turned 4:2:0 frame (even sizes) that are not where they should be.
    static func wrongI420Chroma(_ src: PixelBuffer, _ turned: PixelBuffer, _ o: VideoOrientation) -> Int {
        let a = src.converted(to: .i420), b = turned.converted(to: .i420)
        var wrong = 0
        for plane in 1...2 {
            for y in 0..<b.planes[plane].rows {
                for x in 0..<b.planes[plane].samplesPerRow {
                    let (sx, sy) = source(of: x, y, width: a.planes[plane].samplesPerRow, height: a.planes[plane].rows, o)
                    if PixelBufferTests.byte(b, plane: plane, x: x, y: y) != PixelBufferTests.byte(a, plane: plane, x: sx, y: sy) { wrong += 1 }
                }
            }
        }
        return wrong
    }

    /// Chroma bytes of a mirrored or upside-down YUYV frame that are not where they should be.
    static func wrongYUYVChroma(_ src: PixelBuffer, _ turned: PixelBuffer, _ o: VideoOrientation) -> Int {
        var wrong = 0
        for y in 0..<turned.height {
            for pair in 0..<turned.width / 2 {
                let (sx, sy) = source(of: pair * 2, y, width: src.width, height: src.height, o)
                for c in [1, 3] where PixelBufferTests.byte(turned, plane: 0, x: pair * 4 + c, y: y)
                    != PixelBufferTests.byte(src, plane: 0, x: sx / 2 * 4 + c, y: sy) {
                    wrong += 1
                }
            }
        }
        return wrong
    }

    @Test("every format, mirrored or not, turned by 0, 90, 180 and 270 degrees", arguments: PixelFormat.allCases)
    func everyFormat(_ format: PixelFormat) {
        let src = PixelOrientationTests.pattern(format, width: 8, height: 6)
        for o in PixelOrientationTests.orientations {
            let turned = src.converted(to: format, orientation: o)
            #expect(turned.format == format)
            PixelOrientationTests.expectTurned(src, turned, o)
        }
    }

    @Test("odd sizes: the luma of I420 and the plane of gray8 turn pixel for pixel")
    func oddSizes() {
        for format in [PixelFormat.gray8, .i420] {
            let src = PixelOrientationTests.pattern(format, width: 5, height: 3)
            for o in PixelOrientationTests.orientations {
                let turned = src.converted(to: format, orientation: o)
                for y in 0..<turned.height {
                    for x in 0..<turned.width {
                        let (sx, sy) = PixelOrientationTests.source(of: x, y, width: 5, height: 3, o)
                        #expect(PixelBufferTests.byte(turned, plane: 0, x: x, y: y) == PixelBufferTests.byte(src, plane: 0, x: sx, y: sy))
                    }
                }
            }
        }
    }

    @Test("a turned copy is made once per frame, and gray8 turned from I420 is one copy of the Y plane")
    func madeOnce() {
        let src = PixelOrientationTests.pattern(.i420, width: 16, height: 8)
        let o = VideoOrientation(isMirrored: false, rotationAngle: 90)
        let a = src.converted(to: .gray8, orientation: o), b = src.converted(to: .gray8, orientation: o)
        #expect(a === b)
        #expect(src.cachedConversionCount == 1)
        #expect(src.converted(to: .gray8, orientation: .identity).planes[0].base == src.planes[0].base)
    }
}
