import Foundation

/// Test media made with real encoders (FFmpeg's libx264, mjpeg, png, webp...) on first use.
public enum MediaFixtures {
    public static let folder = TestFolders.make("media")

    /// Tests run in parallel: one fixture is made once, never by two ffmpeg runs at a time.
    private static let lock = NSLock()

    /// Runs ffmpeg to make `name` in the fixture folder unless it exists; returns its path.
    public static func make(_ name: String, _ args: [String]) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        let out = folder + "/" + name
        if FileManager.default.fileExists(atPath: out) { return out }
        try Tool.check("ffmpeg", ["-nostdin", "-loglevel", "error", "-y"] + args + [out])
        return out
    }

    public static let pattern = ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30"]

    public static func h264() throws -> String { try make("clip.mp4", pattern + ["-frames:v", "45", "-c:v", "libx264", "-pix_fmt", "yuv420p"]) }
    public static func mjpegAVI() throws -> String { try make("clip.avi", pattern + ["-frames:v", "20", "-c:v", "mjpeg", "-pix_fmt", "yuvj422p"]) }
    public static func h264MKV() throws -> String { try make("clip.mkv", pattern + ["-frames:v", "10", "-c:v", "libx264", "-pix_fmt", "yuv444p"]) }

    /// 2 s of a still grey scene (H.264); from 1 s on, a white square crosses it.
    public static func motionClip() throws -> String {
        try make("motion.mp4", ["-f", "lavfi", "-i", "color=c=gray:s=320x240:r=30:d=2", "-f", "lavfi", "-i", "color=c=white:s=80x80:r=30",
                                "-filter_complex", "[0][1]overlay=x='if(gte(t,1),(t-1)*240,-100)':y=80:shortest=1",
                                "-c:v", "libx264", "-pix_fmt", "yuv420p"])
    }

    public static func image(_ ext: String, size: String = "160x120") throws -> String {
        try make("still-\(size).\(ext)", ["-f", "lavfi", "-i", "testsrc2=size=\(size):rate=1", "-frames:v", "1"])
    }
}

/// Barcode images made by scripts/make-barcode-images.sh (qrencode, zint, FFmpeg), once per test process.
public enum BarcodeFixtures {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var made: String?

    /// The folder holding qr-text.png, ean13.png, scene.png, ... (see the script for the list).
    public static func folder() throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let made { return made }
        let dir = MediaFixtures.folder + "/barcodes"
        try Tool.check(PluginFixtures.packageRoot + "/scripts/make-barcode-images.sh", [dir])
        made = dir
        return dir
    }

    public static func path(_ name: String) throws -> String { try folder() + "/" + name }

    /// The README's demo video (committed; made by examples/demo/make-demo.sh).
    public static let demoVideo = PluginFixtures.packageRoot + "/examples/demo/codes.mp4"
}

/// The shared benchmark corpus beside the project (../shared/corpus), when it is there.
public enum Corpus {
    public static let root = PluginFixtures.packageRoot + "/../shared/corpus"
    public static var isPresent: Bool { FileManager.default.fileExists(atPath: root + "/MANIFEST.json") }
    public static func path(_ relative: String) -> String { root + "/" + relative }
}
