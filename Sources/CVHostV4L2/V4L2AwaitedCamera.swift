import CVHostCore
import Glibc
import Synchronization

/// A camera named by `--device` that is not there when cvhost starts, with `--reconnect`: a USB
/// camera not enumerated yet at boot, or unplugged while cvhost was stopped. The input starts
/// interrupted, as a network camera down at start does, while the run's other inputs go on; once
/// a video-capture node appears at its path, it is opened, set up as asked (`setUp`: --format,
/// --control, the plugins' capture hints) and streamed, and from then on it is the camera
/// (`camera`), unplugged and back as any camera with --reconnect.
public final class V4L2AwaitedCamera: CaptureDevice, ConnectionHealthReporting, @unchecked Sendable {
    // @unchecked Sendable: the camera once opened and the hints are behind locks.
    public let path: String
    public let connectionHealth = ConnectionHealth()
    public let configurationLock = ConfigurationLock()
    /// Why it could not be opened at start.
    public let why: String
    private let setUp: @Sendable (V4L2CaptureDevice) throws -> [SettingReport]
    private let opened = Locked<V4L2CaptureDevice?>(nil)
    private let hints = Locked<CaptureHints?>(nil)

    /// - Parameter setUp: sets the camera up once it is there (it takes the configuration lock).
    public init(path: String, why: String, setUp: @escaping @Sendable (V4L2CaptureDevice) throws -> [SettingReport]) {
        self.path = path
        self.why = why
        self.setUp = setUp
        connectionHealth.away(why)
    }

    /// The camera, once it came.
    public var camera: V4L2CaptureDevice? { opened.withLock { $0 } }

    public var uniqueID: String { camera?.uniqueID ?? path }
    public var localizedName: String { camera?.localizedName ?? "camera \(path)" }
    public var modelID: String { camera?.modelID ?? "v4l2" }
    public var kind: CaptureDeviceKind { .camera }
    public var isConnected: Bool { camera?.isConnected ?? false }
    public var isLive: Bool { true }
    public var formats: [DeviceFormat] { camera?.formats ?? [] }
    public var activeFormat: DeviceFormat? { camera?.activeFormat }

    public func setActiveFormat(_ format: DeviceFormat) throws {
        throw CaptureError(.unsupported, "\(path) is not there yet: its format is set (--format) when it comes")
    }

    /// Kept, and applied when the camera comes (its focus range); reported as waiting until then.
    public func applyCaptureHints(_ hints: CaptureHints) throws -> [SettingReport] {
        try configurationLock.require(for: "capture hints", deviceName: localizedName)
        self.hints.withLock { $0 = hints }
        return reportHintsUnsupported(hints, reason: "\(path) is not there yet: applied when it comes")
    }

    public func openStream() throws -> FrameStream { AwaitedCameraStream(self) }

    /// The camera at `path`, opened and set up, when a video-capture node is there now; nil while not.
    /// - Throws: what setting it up threw (a format it does not offer): the input fails, as it would at start.
    fileprivate func arrive() throws -> V4L2CaptureDevice? {
        guard V4L2Discovery.query(path)?.isVideoCapture == true, let camera = try? V4L2CaptureDevice(path: path) else { return nil }
        let reports = try setUp(camera)
        if let hints = hints.withLock({ $0 }) {
            try camera.lockForConfiguration()
            defer { camera.unlockForConfiguration() }
            _ = try camera.applyCaptureHints(hints)
        }
        camera.reconnects = true
        opened.withLock { $0 = camera }
        connectionHealth.back()
        Log.info("\(path) (\(camera.localizedName)) is there: streaming" + (reports.isEmpty ? "" : " (its controls set)"))
        return camera
    }
}

/// The awaited camera's frames: an interruption first (the camera is not there), then, once it
/// came, the camera's own stream.
private final class AwaitedCameraStream: FrameStream, @unchecked Sendable {
    // @unchecked Sendable: `next()` runs on the capture thread only; `inner` is behind its lock for cancel().
    private let device: V4L2AwaitedCamera
    private let inner = Locked<FrameStream?>(nil)
    private let cancelled = Atomic(false)
    private var said = false

    init(_ device: V4L2AwaitedCamera) {
        self.device = device
    }

    func next() throws -> CapturedFrame? {
        if let stream = inner.withLock({ $0 }) { return try stream.next() }
        if !said {
            said = true
            throw CaptureInterruption(reason: "\(device.why); waiting for it (--reconnect)")
        }
        // Looked for four times a second, so that a stop is noticed.
        while !cancelled.load(ordering: .relaxed) {
            if let camera = try device.arrive() {
                let stream = try camera.openStream()
                let cancelledMeanwhile = inner.withLock { s -> Bool in
                    s = stream
                    return cancelled.load(ordering: .relaxed)
                }
                if cancelledMeanwhile { stream.cancel() }
                return try stream.next()
            }
            usleep(250_000)
        }
        return nil
    }

    func cancel() {
        cancelled.store(true, ordering: .relaxed)
        inner.withLock { $0 }?.cancel()
    }

    func close() {
        inner.withLock { $0 }?.close()
    }
}
