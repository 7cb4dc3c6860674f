import CVHostCore
import Foundation
import Synchronization

/// A list of still images (PNG, JPEG, WebP, PPM/PGM, BMP, TIFF: whatever FFmpeg decodes) as a
/// capture device that delivers one frame per image, in the order given. Images may differ in
/// size. Each image counts as one second of media time.
///
/// An image that cannot be decoded is skipped and reported through `onSkip`; the others are
/// still processed.
public final class StillImageDevice: CaptureDevice {
    public let paths: [String]
    public let configurationLock = ConfigurationLock()
    /// Called on the capture thread for every image that is skipped, with a one-line reason.
    public let onSkip: @Sendable (_ path: String, _ reason: String) -> Void

    public let uniqueID: String
    public var localizedName: String { paths.count == 1 ? paths[0] : "\(paths.count) images" }
    public var modelID: String { "ffmpeg-images" }
    public var kind: CaptureDeviceKind { .stillImages }
    public var isConnected: Bool { true }
    public var isLive: Bool { false }
    /// Images have their own sizes; there is no single format to choose.
    public var formats: [DeviceFormat] { [] }
    public var activeFormat: DeviceFormat? { nil }

    /// Images whose header declares more pixels are skipped before they are decoded.
    public let maxPixels: Int

    /// The default of `maxPixels`: above a 108-megapixel phone camera's pictures, below what
    /// would take gigabytes to decode (a 16000x16000 PNG of a few megabytes: 2.7 GB and 19 s).
    public static let defaultMaxPixels = 120_000_000

    public init(paths: [String], description: String? = nil, maxPixels: Int = StillImageDevice.defaultMaxPixels,
                onSkip: @escaping @Sendable (String, String) -> Void = { _, _ in }) throws {
        guard !paths.isEmpty else { throw CaptureError(.inputUnavailable, "no images to read") }
        self.paths = paths
        self.maxPixels = maxPixels
        self.uniqueID = "images:\(description ?? paths[0])"
        self.onSkip = onSkip
    }

    public func setActiveFormat(_ format: DeviceFormat) throws {
        try configurationLock.require(for: "the active format", deviceName: localizedName)
        throw CaptureError(.unsupported, "still images have no format to choose")
    }

    public func applyCaptureHints(_ hints: CaptureHints) throws -> [SettingReport] {
        try configurationLock.require(for: "capture hints", deviceName: localizedName)
        return reportHintsUnsupported(hints, reason: "still images have no focus control")
    }

    public func openStream() throws -> FrameStream {
        StillImageStream(paths: paths, maxPixels: maxPixels, onSkip: onSkip)
    }
}

final class StillImageStream: FrameStream, @unchecked Sendable {
    // @unchecked Sendable: `index` is used by the capture thread only; `cancelled` is atomic.
    private let paths: [String]
    private let maxPixels: Int
    private let onSkip: @Sendable (String, String) -> Void
    private var index = 0
    private let cancelled = Atomic(false)

    init(paths: [String], maxPixels: Int, onSkip: @escaping @Sendable (String, String) -> Void) {
        self.paths = paths
        self.maxPixels = maxPixels
        self.onSkip = onSkip
    }

    /// Why `path` is not decoded at all: not a regular file (a named pipe in a folder of images
    /// would block the capture thread in open(), deaf to a stop), or a header declaring more
    /// pixels than `maxPixels`. nil: decode it.
    func refusal(_ path: String) -> String? {
        var info = stat()
        guard PathText.withFileSystemPath(path, { stat($0, &info) }) == 0 else { return nil }  // FFmpeg says why it cannot open it
        let type = info.st_mode & S_IFMT
        if type != S_IFREG {
            let what = type == S_IFIFO ? "a named pipe" : type == S_IFSOCK ? "a socket" : type == S_IFCHR || type == S_IFBLK ? "a device" : "a folder"
            return "not a regular file (\(what)): only image files are read from a folder or a glob"
        }
        if maxPixels > 0, let (w, h) = ImageHeader.size(ofFile: path), w * h > maxPixels {
            return "its header declares \(w)x\(h) pixels, more than --max-image-pixels (\(maxPixels)): refused before decoding "
                + "(decoded it would take \(w * h * 4 / 1_048_576) MiB or more); raise --max-image-pixels to read it"
        }
        return nil
    }

    func next() throws -> CapturedFrame? {
        while index < paths.count, !cancelled.load(ordering: .relaxed) {
            let path = paths[index]
            let pts = Int64(index) * 1_000_000_000
            index += 1
            if let refusal = refusal(path) {
                onSkip(path, refusal)
                continue
            }
            do {
                let decoder = try MediaDecoder(path: path, maxPixels: maxPixels)
                if let (pixels, _) = try decoder.nextFrame() {
                    if ImageHeader.isCutShort(path) {
                        Log.warning("\(path) is cut short (its end is missing): the part of the picture that is not there was decoded as gray")
                    }
                    return CapturedFrame(pixelBuffer: pixels, presentationTimeNs: pts, imagePath: path, isIndependent: true)
                }
                onSkip(path, Self.noImageReason(decoder, path: path))
            } catch {
                onSkip(path, "\(error)")
            }
        }
        return nil
    }

    /// Why a file that opened gave no picture: FFmpeg found no size it takes (a picture larger
    /// than its decoders' limit, (w+128)*(h+128) < 2^28, says "Picture size ... is invalid"), the
    /// data was damaged, or there was none.
    static func noImageReason(_ decoder: MediaDecoder, path: String) -> String {
        if decoder.width == 0 || decoder.height == 0 {
            // A file that does not even begin like a picture (a text file named .png) is not one.
            if !ImageHeader.beginsLikeAnImage(path) {
                return "not an image: it does not begin like a PNG, JPEG, WebP, GIF, BMP, TIFF or PNM file (a text file? a download that failed?)"
            }
            return "no picture size the decoder takes: larger than FFmpeg decodes (about 16000x16000 pixels) or a damaged header (-v shows FFmpeg's message)"
        }
        if decoder.damaged > 0 { return "the \(decoder.width)x\(decoder.height) image is damaged and could not be decoded (-v shows FFmpeg's message)" }
        return "no image in the file"
    }

    func cancel() { cancelled.store(true, ordering: .relaxed) }

    func close() {}
}
