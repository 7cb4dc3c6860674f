
/// What kind of thing a capture device is.
public enum CaptureDeviceKind: String, Sendable {
    case camera
    case testPattern = "testsrc"
    case stillImages = "images"
    case videoFile = "file"
    /// A live stream: a network camera or server by URL, standard input, a named pipe.
    case stream
}

/// A source of frames: a camera, a video file, still images or a test pattern
/// (AVCaptureDevice). Cameras and synthetic sources share this one shape so that a session,
/// and everything downstream of it, cannot tell them apart.
///
/// Configuration (`setActiveFormat`, controls) must happen between `lockForConfiguration()` and
/// `unlockForConfiguration()`; without the lock it throws `.notLockedForConfiguration`.
public protocol CaptureDevice: AnyObject, Sendable {
    /// Stable across runs (and, for cameras, across replugging).
    var uniqueID: String { get }
    /// A human-readable name.
    var localizedName: String { get }
    /// The model, for cameras the driver/card; for other sources their kind.
    var modelID: String { get }
    var kind: CaptureDeviceKind { get }
    /// False once a camera was unplugged.
    var isConnected: Bool { get }
    /// True when frames arrive on the device's own clock whether or not anyone keeps up (cameras,
    /// the paced test pattern): outputs then drop late frames by default instead of blocking.
    var isLive: Bool { get }

    /// Every format the device offers.
    var formats: [DeviceFormat] { get }
    /// The format frames will be delivered in.
    var activeFormat: DeviceFormat? { get }
    /// The exclusive configuration lock of this device.
    var configurationLock: ConfigurationLock { get }

    /// Chooses the format. Requires the configuration lock.
    func setActiveFormat(_ format: DeviceFormat) throws

    /// Applies what consumers asked for (e.g. the near autofocus range) as far as the device
    /// supports it, and reports for each setting what was requested and what was applied.
    /// Requires the configuration lock.
    func applyCaptureHints(_ hints: CaptureHints) throws -> [SettingReport]

    /// Starts delivering frames. Called by the session when it starts running.
    func openStream() throws -> FrameStream
}

extension CaptureDevice {
    /// Takes the exclusive configuration lock (AVCaptureDevice.lockForConfiguration()).
    /// - Throws: `.configurationLocked` when it is already held.
    public func lockForConfiguration() throws { try configurationLock.lock(deviceName: localizedName) }

    /// Releases the configuration lock.
    public func unlockForConfiguration() { configurationLock.unlock() }

    /// Sources without camera controls report every non-default hint as unsupported.
    public func reportHintsUnsupported(_ hints: CaptureHints, reason: String) -> [SettingReport] {
        var reports: [SettingReport] = []
        if hints.autoFocusRangeRestriction != .none {
            reports.append(SettingReport(setting: "auto_focus_range", requested: hints.autoFocusRangeRestriction.rawValue,
                                         applied: nil, status: .unsupported, message: reason))
        }
        return reports
    }
}
