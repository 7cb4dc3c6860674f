@testable import CVHostV4L2
import CV4L2Shim
import CVHostCore
import Testing

/// Frames are read by the layout the driver reports: padded lines, a buffer per plane, and
/// sizes too small for the format refused.
@Suite("V4L2 plane layout")
struct LayoutTests {
    typealias Plane = V4L2Layout.MemoryPlane

    @Test("one buffer with padded lines: chroma follows the luma, NV12's at the luma's stride, YU12's at half")
    func paddedSinglePlane() throws {
        // 638x480 with lines padded to 640 bytes, as drivers align them.
        let nv12 = V4L2Layout(fourcc: CV4L2Shim_PIX_FMT_NV12, width: 638, height: 480,
                              memoryPlanes: [Plane(bytesPerLine: 640, sizeImage: 640 * 480 * 3 / 2)])
        let p = try #require(nv12.imagePlanes(.nv12))
        #expect(p.map(\.bytesPerRow) == [640, 640] && p.map(\.offset) == [0, 640 * 480] && p.map(\.rows) == [480, 240])
        #expect(p.map(\.samplesPerRow) == [638, 319])
        let i420 = V4L2Layout(fourcc: CV4L2Shim_PIX_FMT_YUV420, width: 637, height: 479,
                              memoryPlanes: [Plane(bytesPerLine: 640, sizeImage: 640 * 480 * 3 / 2)])
        let q = try #require(i420.imagePlanes(.i420))
        #expect(q.map(\.bytesPerRow) == [640, 320, 320] && q.map(\.offset) == [0, 640 * 479, 640 * 479 + 320 * 240])
        #expect(q.map(\.rows) == [479, 240, 240])
    }

    @Test("a buffer per plane: each plane's own stride, at the start of its buffer")
    func multiPlanar() throws {
        let nv12m = V4L2Layout(fourcc: CV4L2Shim_PIX_FMT_NV12M, width: 640, height: 480,
                               memoryPlanes: [Plane(bytesPerLine: 704, sizeImage: 704 * 480), Plane(bytesPerLine: 768, sizeImage: 768 * 240)])
        let p = try #require(nv12m.imagePlanes(.nv12))
        #expect(p.map(\.memoryPlane) == [0, 1] && p.map(\.offset) == [0, 0] && p.map(\.bytesPerRow) == [704, 768])
        // The last row needs only its pixels, not its padding.
        #expect(p.map(\.needed) == [704 * 479 + 640, 768 * 239 + 640])
    }

    @Test("a size too small for the format, or planes that do not match it, cannot be read")
    func refusals() {
        let short = V4L2Layout(fourcc: CV4L2Shim_PIX_FMT_YUYV, width: 640, height: 480,
                               memoryPlanes: [Plane(bytesPerLine: 1280, sizeImage: 1280 * 479)])
        #expect(short.imagePlanes(.yuyv) == nil)
        let twoForThree = V4L2Layout(fourcc: CV4L2Shim_PIX_FMT_YUV420M, width: 64, height: 48,
                                     memoryPlanes: [Plane(bytesPerLine: 64, sizeImage: 64 * 48), Plane(bytesPerLine: 32, sizeImage: 32 * 24)])
        #expect(twoForThree.imagePlanes(.i420) == nil)
        #expect(V4L2Layout(fourcc: CV4L2Shim_PIX_FMT_NV12M, width: 64, height: 48, memoryPlanes: []).pixelFormat == .nv12)
    }
}
