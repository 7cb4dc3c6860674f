import CVHostCore
import Foundation

/// Turns what a user gives to `--input` into a capture device:
///
/// - `testsrc[:WxH][@FPS][:unpaced]`: the test pattern (default 640x480@30, live-paced).
/// - a URL (`rtsp://`, `http://`, `rtmp://`, `srt://`, `udp://`...), `-` (standard input) or a
///   named pipe: a live stream.
/// - a folder: every image in it (by extension), in name order.
/// - a glob such as `'shots/*.png'` (quote it so the shell leaves it alone): the matching images.
/// - an image file (by extension): that image.
/// - any other file: a video file.
///
/// Paths are PathText: a name that is not UTF-8 is written with `\xNN` escapes.
public enum InputResolver {
    /// File extensions read as still images.
    public static let imageExtensions: Set<String> = ["png", "jpg", "jpeg", "webp", "ppm", "pgm", "pnm", "bmp", "tif", "tiff"]

    public static func device(
        for spec: String, streamOptions: StreamOptions = StreamOptions(), maxImagePixels: Int = StillImageDevice.defaultMaxPixels,
        onSkip: @escaping @Sendable (String, String) -> Void = { _, _ in }
    ) throws -> CaptureDevice {
        if spec == "testsrc" || spec.hasPrefix("testsrc:") || spec.hasPrefix("testsrc@") {
            return try testPattern(spec)
        }
        if let location = StreamLocation(spec) {
            return try NetworkStreamDevice(location: location, options: streamOptions)
        }
        if let scheme = spec.range(of: "://").map({ spec[..<$0.lowerBound] }), !scheme.contains("/") {
            throw CaptureError(.unsupportedInput, "cannot read \(PasswordRedaction.redact(spec)): cvhost reads "
                               + "\(StreamLocation.networkSchemes.sorted().map { $0 + "://" }.joined(separator: ", ")) URLs")
        }
        switch PathText.entry(spec) {
        case .folder:
            let images = (PathText.contents(ofFolder: spec) ?? []).filter(isImage).sorted()
            guard !images.isEmpty else {
                throw CaptureError(.inputUnavailable,
                                   "folder \(spec) holds no images (\(imageExtensions.sorted().joined(separator: ", ")))")
            }
            return try StillImageDevice(paths: images, description: spec, maxPixels: maxImagePixels, onSkip: onSkip)
        case .file:
            guard PathText.isReadable(spec) else {
                throw CaptureError(.inputUnavailable, "input \(spec) is not readable: check its permissions")
            }
            if isImage(spec) { return try StillImageDevice(paths: [spec], maxPixels: maxImagePixels, onSkip: onSkip) }
            return try VideoFileDevice(path: spec)
        case nil: break
        }
        if spec.contains(where: { "*?[".contains($0) }) {
            let matches = PathText.glob(spec)
            let images = matches.filter(isImage)
            guard !images.isEmpty else {
                throw CaptureError(.inputUnavailable, "no images match \(spec)")
            }
            return try StillImageDevice(paths: images, description: spec, maxPixels: maxImagePixels, onSkip: onSkip)
        }
        throw CaptureError(.inputUnavailable,
                           "input \(spec) not found: give a video file, an image, a folder, a quoted glob, a stream URL, - (stdin) or testsrc[:WxH@FPS]")
    }

    static func isImage(_ path: String) -> Bool {
        imageExtensions.contains((path as NSString).pathExtension.lowercased())
    }

    /// Parses `testsrc[:WxH][@FPS][:unpaced]`.
    static func testPattern(_ spec: String) throws -> TestPatternDevice {
        var rest = Substring(spec.dropFirst("testsrc".count))
        var paced = true
        if rest.hasSuffix(":unpaced") {
            paced = false
            rest = rest.dropLast(":unpaced".count)
        }
        var width = 640, height = 480
        var fps = 30.0
        let bad = CaptureError(.unsupportedInput, "cannot read \(spec): write testsrc[:WxH][@FPS][:unpaced], e.g. testsrc:1280x720@30")
        if rest.hasPrefix(":") { rest = rest.dropFirst() }
        let parts = rest.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        if let size = parts.first, !size.isEmpty {
            let wh = size.split(separator: "x")
            guard wh.count == 2, let w = Int(wh[0]), let h = Int(wh[1]) else { throw bad }
            width = w
            height = h
        }
        if parts.count == 2 {
            guard let f = Double(parts[1]) else { throw bad }
            fps = f
        }
        return try TestPatternDevice(width: width, height: height, frameRate: fps, paced: paced)
    }
}
