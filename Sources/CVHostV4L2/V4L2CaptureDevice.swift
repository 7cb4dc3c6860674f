import CV4L2Shim
import CVHostCore
import Glibc
import Synchronization

/// A V4L2 camera (AVCaptureDevice for Linux), opened through libv4l2 so that cameras that give
/// only MJPEG or vendor formats still deliver frames cvhost can read.
///
/// Configuration — the active format and every control — needs `lockForConfiguration()`;
/// each setter reads the value back and reports what the device applied.
public final class V4L2CaptureDevice: CaptureDevice, @unchecked Sendable {
    // @unchecked Sendable: mutable state, the open descriptor included, is behind `state`.
    public let node: V4L2NodeInfo
    public let configurationLock = ConfigurationLock()
    public let formats: [DeviceFormat]
    private let state: Mutex<State>

    /// The node now open; after a reconnection it may be another /dev/videoN.
    public var path: String { state.withLock { $0.path } }
    /// The open descriptor (through libv4l2); -1 while the camera is unplugged.
    var fd: Int32 { state.withLock { $0.fd } }

    /// When true, a camera unplugged while streaming is waited for and resumed (its format and
    /// the controls set on it restored) instead of ending the run with an error.
    public var reconnects: Bool {
        get { state.withLock { $0.reconnects } }
        set { state.withLock { $0.reconnects = newValue } }
    }

    struct State {
        var path: String
        var fd: Int32
        var reconnects = false
        /// What was set, to set again on a camera that comes back: the format and rate, the controls.
        var chosen: (format: DeviceFormat, frameRate: Double)?
        var controlsSet: [(id: UInt32, value: Int64)] = []
        var active: DeviceFormat?
        /// bytes per line and the pixel format the driver (or libv4l2) delivers, from G_FMT.
        var delivered: (fourcc: UInt32, bytesPerLine: Int, sizeImage: Int)?
        var frameRate: Double = 0
        var connected = true
        var streaming = false
    }

    public var uniqueID: String { node.uniqueID }
    public var localizedName: String { node.card }
    public var modelID: String { node.modelID }
    public var kind: CaptureDeviceKind { .camera }
    public var isConnected: Bool { state.withLock { $0.connected } }
    public var isLive: Bool { true }
    public var activeFormat: DeviceFormat? { state.withLock { $0.active } }
    /// The frame rate set with the active format (1 / activeVideoMinFrameDuration).
    public var activeFrameRate: Double { state.withLock { $0.frameRate } }
    /// AVCaptureDevice.activeVideoMinFrameDuration, seconds.
    public var activeVideoMinFrameDuration: Double { activeFrameRate > 0 ? 1 / activeFrameRate : 0 }

    /// Opens the node and reads its formats, its current format and frame rate.
    /// - Throws: `.inputUnavailable` when it is missing or not a video-capture node, `.deviceBusy`.
    public init(path: String) throws {
        guard let node = V4L2Discovery.query(path) else {
            throw CaptureError(.inputUnavailable, "camera \(path) not found or not a V4L2 device: `cvhost devices` lists cameras")
        }
        guard node.isVideoCapture else {
            throw CaptureError(.inputUnavailable, "\(path) (\(node.card)) is not a video-capture node: `cvhost devices` lists cameras")
        }
        let fd = CV4L2Shim_open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw V4L2IO.error(errno, "open", device: path) }
        self.node = node
        self.state = Mutex(State(path: path, fd: fd))
        self.formats = V4L2FormatEnumeration.formats(fd: fd)
        readBack()
    }

    deinit {
        let fd = state.withLock { $0.fd }
        if fd >= 0 { _ = CV4L2Shim_close(fd) }
    }

    /// The camera went away: close its descriptor so that the driver can let go of it.
    func releaseAfterUnplug() {
        let fd: Int32 = state.withLock { s in
            defer {
                s.fd = -1
                s.connected = false
            }
            return s.fd
        }
        if fd >= 0 { _ = CV4L2Shim_close(fd) }
    }

    /// Looks for the camera (by unique id, on any /dev/videoN), opens it, and sets again the
    /// format, frame rate and controls set before. - Returns: false while it is not back.
    func reopenAfterUnplug() -> Bool {
        guard let node = V4L2Discovery.captureNodes().first(where: { $0.uniqueID == uniqueID }) else { return false }
        let fd = CV4L2Shim_open(node.path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        let (chosen, controls) = state.withLock { s -> ((format: DeviceFormat, frameRate: Double)?, [(id: UInt32, value: Int64)]) in
            s.fd = fd
            s.path = node.path
            s.connected = true
            return (s.chosen, s.controlsSet)
        }
        if let chosen { try? applyFormat(chosen.format, frameRate: chosen.frameRate) }
        for c in controls { try? V4L2Controls.set(fd: fd, id: c.id, value: c.value, device: node.path) }
        readBack()
        return true
    }

    /// Reads the current format and frame rate from the driver.
    private func readBack() {
        let fd = self.fd
        var f = v4l2_format()
        f.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        guard V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_G_FMT, &f) == 0 else { return }
        var p = v4l2_streamparm()
        p.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        let rate: Double
        if V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_G_PARM, &p) == 0, p.parm.capture.timeperframe.numerator > 0 {
            rate = Double(p.parm.capture.timeperframe.denominator) / Double(p.parm.capture.timeperframe.numerator)
        } else {
            rate = 0
        }
        let w = Int(f.fmt.pix.width), h = Int(f.fmt.pix.height), fourcc = f.fmt.pix.pixelformat
        // The active format as the device lists it (its own four-character code), when it does.
        let listed = formats.first { $0.width == w && $0.height == h && $0.deviceFourCC == V4L2IO.fourCC(fourcc) }
        // The active format carries the active frame rate only (the listed one carries all it offers).
        let rates = rate > 0 ? [FrameRateRange(minFrameRate: rate, maxFrameRate: rate)] : listed?.frameRateRanges ?? []
        state.withLock { s in
            s.active = DeviceFormat(deviceFourCC: listed?.deviceFourCC ?? V4L2IO.fourCC(fourcc),
                                    pixelFormat: V4L2FormatEnumeration.pixelFormat(for: fourcc), width: w, height: h,
                                    frameRateRanges: rates)
            s.delivered = (fourcc, Int(f.fmt.pix.bytesperline), Int(f.fmt.pix.sizeimage))
            s.frameRate = rate
        }
    }

    // MARK: - Formats

    public func setActiveFormat(_ format: DeviceFormat) throws {
        try setActiveFormat(format, frameRate: format.maxFrameRate)
    }

    /// Sets the format and frame rate (S_FMT, S_PARM) and reads both back. A device format
    /// cvhost cannot read directly (MJPEG, vendor formats) is asked of libv4l2 as I420, which
    /// it converts to. Requires the configuration lock.
    public func setActiveFormat(_ format: DeviceFormat, frameRate: Double) throws {
        try configurationLock.require(for: "the active format", deviceName: localizedName)
        guard state.withLock({ !$0.streaming }) else {
            throw CaptureError(.invalidState, "cannot change the format of \(path) while it streams")
        }
        try applyFormat(format, frameRate: frameRate)
        state.withLock { $0.chosen = (format, frameRate) }
    }

    private func applyFormat(_ format: DeviceFormat, frameRate: Double) throws {
        let fd = self.fd, path = self.path
        var f = v4l2_format()
        f.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        f.fmt.pix.width = UInt32(format.width)
        f.fmt.pix.height = UInt32(format.height)
        f.fmt.pix.pixelformat = format.pixelFormat != nil ? (V4L2IO.fourCC(format.deviceFourCC) ?? 0) : CV4L2Shim_PIX_FMT_YUV420
        f.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try V4L2IO.ioctl(fd, CV4L2Shim_VIDIOC_S_FMT, &f, "VIDIOC_S_FMT", device: path)
        if frameRate > 0 {
            var p = v4l2_streamparm()
            p.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            // 1000/(rate*1000) keeps fractional rates such as 29.97.
            p.parm.capture.timeperframe = v4l2_fract(numerator: 1000, denominator: UInt32((frameRate * 1000).rounded()))
            _ = V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_S_PARM, &p)  // some drivers have no frame-rate control
        }
        readBack()
    }

    /// The pixel format of delivered frames, their bytes per line, and the buffer size.
    var deliveredLayout: (format: PixelFormat?, bytesPerLine: Int, sizeImage: Int, width: Int, height: Int)? {
        state.withLock { s in
            guard let d = s.delivered, let a = s.active else { return nil }
            return (V4L2FormatEnumeration.pixelFormat(for: d.fourcc), d.bytesPerLine, d.sizeImage, a.width, a.height)
        }
    }

    // MARK: - Controls

    /// The controls of the stable table that this camera has.
    public var controls: [V4L2ControlInfo] { V4L2Controls.available(fd: fd) }

    /// Sets a control by stable name from text (a number, on/off, or a menu item's name), reads
    /// it back, and reports requested and applied values. A control the camera lacks is a
    /// report with status `.unsupported`, not an error. Requires the configuration lock.
    public func setControl(_ name: String, to text: String) throws -> SettingReport {
        try configurationLock.require(for: name, deviceName: localizedName)
        guard let id = V4L2Controls.id(named: name) else {
            let known = V4L2Controls.table.map(\.name).joined(separator: ", ")
            throw CaptureError(.unsupported, "unknown control '\(name)': known controls are \(known)")
        }
        guard let info = V4L2Controls.query(fd: fd, id: id) else {
            return SettingReport(setting: name, requested: text, applied: nil, status: .unsupported,
                                 message: "\(localizedName) has no \(name) control")
        }
        guard let value = V4L2Controls.parse(text, for: info) else {
            let choices = info.menu.map(\.name).joined(separator: ", ")
            throw CaptureError(.unsupported, "\(name)=\(text) is not valid: give a number from \(info.minimum) to \(info.maximum)"
                + (choices.isEmpty ? "" : " or one of \(choices)"))
        }
        return set(info, value: value, requested: text)
    }

    private func set(_ info: V4L2ControlInfo, value: Int64, requested: String) -> SettingReport {
        if info.isReadOnly {
            return SettingReport(setting: info.name, requested: requested, applied: nil, status: .failed, message: "\(info.name) is read-only")
        }
        do {
            try V4L2Controls.set(fd: fd, id: info.id, value: value, device: path)
            let back = try V4L2Controls.get(fd: fd, id: info.id, device: path)
            state.withLock { s in
                s.controlsSet.removeAll { $0.id == info.id }
                s.controlsSet.append((info.id, value))
            }
            return SettingReport(setting: info.name, requested: requested, applied: V4L2Controls.describe(back, for: info),
                                 status: .applied,
                                 message: back == value ? nil : "the camera applied \(V4L2Controls.describe(back, for: info))")
        } catch {
            return SettingReport(setting: info.name, requested: requested, applied: nil, status: .failed, message: "\(error)")
        }
    }

    /// The value of a control by stable name, as text; nil when the camera lacks it.
    public func controlValue(_ name: String) -> String? {
        guard let id = V4L2Controls.id(named: name), let info = V4L2Controls.query(fd: fd, id: id) else { return nil }
        return value(of: info)
    }

    /// The value of a control already described (one of `controls`), as text; nil when unreadable.
    public func value(of info: V4L2ControlInfo) -> String? {
        guard let v = try? V4L2Controls.get(fd: fd, id: info.id, device: path) else { return nil }
        return V4L2Controls.describe(v, for: info)
    }

    // MARK: - The seeds' focus, exposure, white balance, zoom and torch

    /// AVCaptureDevice.isAutoFocusRangeRestrictionSupported: the camera has V4L2_CID_AUTO_FOCUS_RANGE.
    public var isAutoFocusRangeRestrictionSupported: Bool { V4L2Controls.query(fd: fd, id: UInt32(V4L2_CID_AUTO_FOCUS_RANGE)) != nil }

    public func isFocusModeSupported(_ mode: FocusMode) -> Bool {
        switch mode {
        case .locked: V4L2Controls.query(fd: fd, id: UInt32(V4L2_CID_FOCUS_ABSOLUTE)) != nil
                || V4L2Controls.query(fd: fd, id: UInt32(V4L2_CID_FOCUS_AUTO)) != nil
        case .continuousAutoFocus: V4L2Controls.query(fd: fd, id: UInt32(V4L2_CID_FOCUS_AUTO)) != nil
        }
    }

    public func isExposureModeSupported(_ mode: ExposureMode) -> Bool {
        V4L2Controls.query(fd: fd, id: UInt32(V4L2_CID_EXPOSURE_AUTO)) != nil
    }

    public var isWhiteBalanceModeSupported: Bool { V4L2Controls.query(fd: fd, id: UInt32(V4L2_CID_AUTO_WHITE_BALANCE)) != nil }
    public var isZoomSupported: Bool { V4L2Controls.query(fd: fd, id: UInt32(V4L2_CID_ZOOM_ABSOLUTE)) != nil }
    public var hasTorch: Bool { V4L2Controls.query(fd: fd, id: UInt32(V4L2_CID_FLASH_LED_MODE)) != nil }

    /// AVCaptureDevice.FocusMode as V4L2 has it: continuous = FOCUS_AUTO on; locked = off.
    public enum FocusMode: String, Sendable { case locked, continuousAutoFocus = "continuous" }
    /// AVCaptureDevice.ExposureMode: locked = manual, continuous = auto.
    public enum ExposureMode: String, Sendable { case locked, continuousAutoExposure = "continuous" }

    public func setFocusMode(_ mode: FocusMode) throws -> SettingReport {
        try setControl("focus_auto", to: mode == .continuousAutoFocus ? "1" : "0")
    }

    public func setExposureMode(_ mode: ExposureMode) throws -> SettingReport {
        // V4L2_EXPOSURE_MANUAL = 1; V4L2_EXPOSURE_APERTURE_PRIORITY = 3 is what UVC cameras call auto.
        try setControl("exposure_auto", to: mode == .locked ? "1" : "3")
    }

    public func setWhiteBalanceAuto(_ on: Bool) throws -> SettingReport {
        try setControl("white_balance_auto", to: on ? "1" : "0")
    }

    /// AVCaptureDevice.videoZoomFactor: 1 is the camera's widest, mapped onto ZOOM_ABSOLUTE's range.
    public func setZoomFactor(_ factor: Double) throws -> SettingReport {
        guard let info = V4L2Controls.query(fd: fd, id: UInt32(V4L2_CID_ZOOM_ABSOLUTE)) else {
            try configurationLock.require(for: "zoom", deviceName: localizedName)
            return SettingReport(setting: "zoom_factor", requested: String(factor), applied: nil, status: .unsupported,
                                 message: "\(localizedName) has no zoom control")
        }
        let span = Double(info.maximum - info.minimum)
        let value = info.minimum + Int64((min(max(factor, 1), 10) - 1) / 9 * span)
        return try setControl("zoom_absolute", to: String(value))
    }

    /// AVCaptureDevice.torchMode on/off through V4L2_CID_FLASH_LED_MODE (0 none, 2 torch).
    public func setTorch(_ on: Bool) throws -> SettingReport {
        try setControl("torch", to: on ? "2" : "0")
    }

    // MARK: - CaptureDevice

    /// Applies the plugins' autofocus range (near → MACRO, far → INFINITY, none → AUTO) when the
    /// camera has the control; reports `unsupported` when it has not.
    public func applyCaptureHints(_ hints: CaptureHints) throws -> [SettingReport] {
        try configurationLock.require(for: "capture hints", deviceName: localizedName)
        var reports: [SettingReport] = []
        if hints.autoFocusRangeRestriction != .none {
            let requested = hints.autoFocusRangeRestriction.rawValue
            if let info = V4L2Controls.query(fd: fd, id: UInt32(V4L2_CID_AUTO_FOCUS_RANGE)) {
                // V4L2_AUTO_FOCUS_RANGE_MACRO = 2, _INFINITY = 3.
                let value: Int64 = hints.autoFocusRangeRestriction == .near ? 2 : 3
                let r = set(info, value: value, requested: requested)
                reports.append(SettingReport(setting: "auto_focus_range", requested: requested, applied: r.applied,
                                             status: r.status, message: r.message))
            } else {
                reports.append(SettingReport(setting: "auto_focus_range", requested: requested, applied: nil, status: .unsupported,
                                             message: "\(localizedName) has no auto focus range control"))
            }
        }
        if hints.minWidth > 0 || hints.minHeight > 0, let a = activeFormat, a.width < hints.minWidth || a.height < hints.minHeight {
            reports.append(SettingReport(setting: "min_size", requested: "\(hints.minWidth)x\(hints.minHeight)",
                                         applied: "\(a.width)x\(a.height)", status: .failed,
                                         message: "the active format is smaller than a plugin needs: choose one with --format"))
        }
        return reports
    }

    public func openStream() throws -> FrameStream {
        guard let layout = deliveredLayout else {
            throw CaptureError(.unsupported, "\(path): cannot read its current format")
        }
        guard let pixelFormat = layout.format else {
            throw CaptureError(.unsupported,
                               "\(path) delivers \(activeFormat?.deviceFourCC ?? "?"), which cvhost cannot read: choose another with --pixel-format")
        }
        let stream = try V4L2Stream(device: self, pixelFormat: pixelFormat, width: layout.width, height: layout.height,
                                    bytesPerLine: layout.bytesPerLine)
        state.withLock { $0.streaming = true }
        return stream
    }

    func streamEnded(disconnected: Bool) {
        state.withLock { s in
            s.streaming = false
            if disconnected { s.connected = false }
        }
    }
}
