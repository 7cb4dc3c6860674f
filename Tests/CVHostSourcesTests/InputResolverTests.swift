import CVHostCore
import Foundation
import CVHostTestSupport
import Testing
@testable import CVHostSources

@Suite("Inputs: test pattern, video files, still images")
struct InputResolverTests {
    /// Reads every frame of a device.
    static func frames(_ device: CaptureDevice) throws -> [CapturedFrame] {
        let stream = try device.openStream()
        defer { stream.close() }
        var all: [CapturedFrame] = []
        while let f = try stream.next() { all.append(f) }
        return all
    }

    @Test("testsrc specs")
    func testsrcSpecs() throws {
        let d = try #require(try InputResolver.device(for: "testsrc") as? TestPatternDevice)
        #expect(d.width == 640 && d.height == 480 && d.frameRate == 30 && d.isLive)
        let e = try #require(try InputResolver.device(for: "testsrc:320x240@15:unpaced") as? TestPatternDevice)
        #expect(e.width == 320 && e.height == 240 && e.frameRate == 15 && !e.isLive)
        for bad in ["testsrc:axb", "testsrc:640x480@0", "testsrc:7x5", "testsrc:640x480@fast"] {
            #expect(throws: CaptureError.self, "\(bad)") { try InputResolver.device(for: bad) }
        }
    }

    @Test("the test pattern is deterministic and numbers its frames")
    func testPattern() throws {
        let device = try TestPatternDevice(width: 64, height: 48, frameRate: 1000, paced: false)
        let stream = try device.openStream()
        var firsts: [UInt8] = []
        var checksums: [Int] = []
        for _ in 0..<3 {
            let f = try #require(try stream.next())
            let y = f.pixelBuffer.planes[0]
            firsts.append(y.base.load(as: UInt8.self))
            var sum = 0
            for row in 0..<48 { for x in 0..<64 { sum += Int(y.base.load(fromByteOffset: row * y.bytesPerRow + x, as: UInt8.self)) } }
            checksums.append(sum)
        }
        #expect(firsts == [0, 1, 2])
        let again = try TestPatternDevice(width: 64, height: 48, frameRate: 1000, paced: false).openStream()
        let f0 = try #require(try again.next())
        var sum = 0
        let y = f0.pixelBuffer.planes[0]
        for row in 0..<48 { for x in 0..<64 { sum += Int(y.base.load(fromByteOffset: row * y.bytesPerRow + x, as: UInt8.self)) } }
        #expect(sum == checksums[0])
        #expect(checksums[1] != checksums[0])
    }

    @Test("a paced test pattern stops promptly when cancelled")
    func cancelPaced() throws {
        let stream = try TestPatternDevice(width: 64, height: 48, frameRate: 1, paced: true).openStream()
        _ = try stream.next()
        stream.cancel()
        #expect(try stream.next() == nil)
    }

    @Test("H.264 in MP4: every frame, I420 without a copy, media timestamps")
    func h264() throws {
        let device = try InputResolver.device(for: try MediaFixtures.h264())
        #expect(device.kind == .videoFile && !device.isLive)
        #expect(device.activeFormat?.width == 320 && device.activeFormat?.maxFrameRate == 30)
        let frames = try InputResolverTests.frames(device)
        #expect(frames.count == 45)
        #expect(frames.allSatisfy { $0.pixelBuffer.format == .i420 })
        #expect(frames[1].presentationTimeNs - frames[0].presentationTimeNs == 33_333_333)
    }

    @Test("MJPEG in AVI and 4:4:4 H.264 in MKV are converted to I420")
    func otherContainers() throws {
        let avi = try InputResolverTests.frames(try InputResolver.device(for: try MediaFixtures.mjpegAVI()))
        #expect(avi.count == 20 && avi[0].pixelBuffer.format == .i420 && avi[0].pixelBuffer.width == 320)
        let mkv = try InputResolverTests.frames(try InputResolver.device(for: try MediaFixtures.h264MKV()))
        #expect(mkv.count == 10 && mkv[0].pixelBuffer.format == .i420)
    }

    @Test("still images: PNG, JPEG, WebP, PPM; folders and globs in name order", arguments: ["png", "jpg", "webp", "ppm"])
    func stills(_ ext: String) throws {
        let path = try MediaFixtures.image(ext)
        let frames = try InputResolverTests.frames(try InputResolver.device(for: path))
        #expect(frames.count == 1)
        #expect(frames[0].pixelBuffer.width == 160 && frames[0].pixelBuffer.height == 120)
    }

    @Test("a folder and a glob; a corrupt image is skipped and reported, the rest still read")
    func folderAndGlob() throws {
        let dir = MediaFixtures.folder + "/shots-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try MediaFixtures.image("png"), toPath: dir + "/a.png")
        try FileManager.default.copyItem(atPath: try MediaFixtures.image("jpg", size: "200x100"), toPath: dir + "/c.jpg")
        try "not an image".write(toFile: dir + "/b.png", atomically: true, encoding: .utf8)
        try "notes".write(toFile: dir + "/readme.txt", atomically: true, encoding: .utf8)
        let skipped = SkipLog()
        let folder = try InputResolver.device(for: dir, onSkip: { path, _ in skipped.add(path) })
        let frames = try InputResolverTests.frames(folder)
        #expect(frames.map(\.pixelBuffer.width) == [160, 200])
        #expect(skipped.paths == [dir + "/b.png"])
        #expect(frames.map(\.presentationTimeNs) == [0, 2_000_000_000])
        let glob = try InputResolver.device(for: dir + "/*.jpg")
        #expect(try InputResolverTests.frames(glob).count == 1)
    }

    @Test("missing and unreadable inputs are clear errors")
    func missing() throws {
        for spec in ["/nonexistent/clip.mp4", "/nonexistent/*.png"] {
            #expect(throws: CaptureError.self) { try InputResolver.device(for: spec) }
        }
        let text = MediaFixtures.folder + "/not-a-video.mp4"
        try "hello".write(toFile: text, atomically: true, encoding: .utf8)
        do {
            _ = try InputResolver.device(for: text)
            Issue.record("a text file opened as video")
        } catch let e as CaptureError {
            #expect(e.message.contains("not-a-video.mp4"))
        }
    }
}

final class SkipLog: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func add(_ p: String) { lock.withLock { list.append(p) } }
    var paths: [String] { lock.withLock { list } }
}
