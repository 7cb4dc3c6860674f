import CVHostCore
import Synchronization

/// A video file as a capture device. Not live: by default consumers block the decoder, so
/// every frame is processed and results are the same on every run.
public final class VideoFileDevice: CaptureDevice, DamageReporting, EncodedStreamSource {
    public let path: String
    public let configurationLock = ConfigurationLock()
    private let format: DeviceFormat
    /// Frames in the file when the container says so, else 0.
    public let frameCountHint: Int64
    /// Damaged packets and frames skipped while reading (FFmpeg conceals what it can).
    public var damagedPackets: Int { damage.value.load(ordering: .relaxed) }
    private let damage = DamageCount()
    public var packetObserver: EncodedPacketObserver? {
        get { observer.withLock { $0 } }
        set { observer.withLock { $0 = newValue } }
    }
    private let observer = Locked<EncodedPacketObserver?>(nil)

    /// FFmpeg's own log on stderr: only when verbose.
    public static func setLibraryLogging(verbose: Bool) { MediaDecoder.setLibraryLogging(verbose: verbose) }

    public var uniqueID: String { "file:\(path)" }
    public var localizedName: String { path }
    public let modelID: String
    public var kind: CaptureDeviceKind { .videoFile }
    public var isConnected: Bool { true }
    public var isLive: Bool { false }
    public var formats: [DeviceFormat] { [format] }
    public var activeFormat: DeviceFormat? { format }

    /// Opens the file once to read its format.
    /// - Throws: `.inputUnavailable` or `.unsupportedInput` with a message naming the file.
    public init(path: String) throws {
        self.path = path
        let probe = try MediaDecoder(path: path)
        modelID = "ffmpeg-\(probe.codecName)"
        frameCountHint = probe.frameCountHint
        format = probe.deviceFormat
    }

    public func setActiveFormat(_ format: DeviceFormat) throws {
        try configurationLock.require(for: "the active format", deviceName: localizedName)
        guard format == self.format else { throw CaptureError(.unsupported, "\(path) offers only \(self.format)") }
    }

    public func applyCaptureHints(_ hints: CaptureHints) throws -> [SettingReport] {
        try configurationLock.require(for: "capture hints", deviceName: localizedName)
        return reportHintsUnsupported(hints, reason: "a video file has no focus control")
    }

    public func openStream() throws -> FrameStream {
        let decoder = try MediaDecoder(path: path)
        decoder.packetObserver = packetObserver
        return VideoFileStream(decoder: decoder, damage: damage, framesListed: frameCountHint)
    }
}

/// Frames of a video file, in decode order.
final class VideoFileStream: FrameStream, @unchecked Sendable {
    // @unchecked Sendable: the decoder is used by the capture thread only; `cancelled` is atomic.
    private var decoder: MediaDecoder?
    private let cancelled = Atomic(false)
    private let damage: DamageCount
    /// Frames the container's index lists (0: it does not say).
    private let framesListed: Int64

    func need(framesPerSecond fps: Double, keyframesWillDo: Bool) { decoder?.need(framesPerSecond: fps, keyframesWillDo: keyframesWillDo) }

    init(decoder: MediaDecoder, damage: DamageCount, framesListed: Int64) {
        self.decoder = decoder
        self.damage = damage
        self.framesListed = framesListed
    }

    func next() throws -> CapturedFrame? {
        guard !cancelled.load(ordering: .relaxed), let decoder else { return nil }
        defer { damage.value.store(decoder.damaged, ordering: .relaxed) }
        guard let (pixels, pts) = try decoder.nextFrame() else {
            try checkComplete(decoder)
            return nil
        }
        return CapturedFrame(pixelBuffer: pixels, presentationTimeNs: pts)
    }

    /// At the end of the file: a file cut short (its index intact) ends like a whole one, with
    /// frames missing; say so rather than pass it for complete. A frame or two fewer than listed
    /// is normal (an edit list's skipped frames); more, or fewer with damage seen, is not.
    private func checkComplete(_ decoder: MediaDecoder) throws {
        // Frames skipped undecoded (FrameSkipping) were there: their packets were read. (Else the
        // frames decoded: a packet read but damaged beyond decoding is a frame missing.)
        let read = decoder.hasSkipped ? max(decoder.framesDecoded, decoder.packetsRead) : decoder.framesDecoded
        let missing = framesListed - read
        guard framesListed > 0, missing > 2 || (missing > 0 && decoder.damaged > 0) else { return }
        throw CaptureError(.inputIncomplete, "\(decoder.path) ends after \(read) of the \(framesListed) frames its index lists"
                           + (decoder.damaged > 0 ? " (\(decoder.damaged) damaged packets skipped)" : "")
                           + ": the file is cut short or damaged; its results cover part of it")
    }

    func cancel() { cancelled.store(true, ordering: .relaxed) }

    func close() { decoder = nil }
}

/// Damaged packets of a file, written by its stream and read by whoever reports on the run.
/// A device that reads compressed media and skips what it cannot decode: it says how much, so
/// that a run can report it once at its end.
public protocol DamageReporting: CaptureDevice {
    /// Damaged packets and frames skipped so far (FFmpeg conceals what it can).
    var damagedPackets: Int { get }
}

final class DamageCount: Sendable {
    let value = Atomic(0)
}
