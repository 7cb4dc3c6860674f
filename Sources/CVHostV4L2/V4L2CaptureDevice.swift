import CV4L2Shim
import CVHostCore
import Glibc

/// A V4L2 camera (AVCaptureDevice for Linux). The camera is always set to one of its own
/// formats: raw YUV, grey and RGB frames are read as the driver fills them, MJPEG is decoded by
/// cvhost (MJPEGDecoder), and the formats only libv4lconvert reads (Bayer, vendor formats) are
/// converted with it (V4L2FormatConverter).
///
/// Configuration — the active format and every control — needs `lockForConfiguration()`;
/// each setter reads the value back and reports what the device applied.
public final class V4L2CaptureDevice: CaptureDevice, ConnectionHealthReporting, @unchecked Sendable {
    /// The camera unplugged and back (--reconnect), for the input's health.
    public let connectionHealth = ConnectionHealth()
    // @unchecked Sendable: mutable state, the open descriptor included, is behind `state`.
    public let node: V4L2NodeInfo
    public let configurationLock = ConfigurationLock()
    public let formats: [DeviceFormat]
    /// Single- or multi-planar: which buffer API the node speaks.
    let bufferType: V4L2BufferType
    private let state: Locked<State>

    /// The node now open; after a reconnection it may be another /dev/videoN.
    public var path: String { state.withLock { $0.path } }
    /// The open node; closed (every call fails with EBADF) while the camera is unplugged.
    var fd: V4L2Descriptor { state.withLock { $0.fd } }

    /// When true, a camera unplugged while streaming is waited for and resumed (its format and
    /// the controls set on it restored) instead of ending the run with an error.
    public var reconnects: Bool {
        get { state.withLock { $0.reconnects } }
        set { state.withLock { $0.reconnects = newValue } }
    }

    struct State {
        var path: String
        var fd: V4L2Descriptor
        var reconnects = false
        /// What was set, to set again on a camera that comes back: the format and rate, the controls.
        var chosen: (format: DeviceFormat, frameRate: Double)?
        var controlsSet: [(id: UInt32, value: Int64)] = []
        var active: DeviceFormat?
        /// The layout of the frames the driver delivers, from G_FMT.
        var delivered: V4L2Layout?
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
    /// The frame rate set with the active format.
    public var activeFrameRate: Double { state.withLock { $0.frameRate } }

    /// Opens the node and reads its formats, its current format and frame rate.
    /// - Throws: `.inputUnavailable` when it is missing or not a video-capture node, `.deviceBusy`.
    public init(path: String) throws {
        guard let node = V4L2Discovery.query(path) else {
            throw CaptureError(.inputUnavailable, "camera \(path) not found or not a V4L2 device: `cvhost devices` lists cameras")
        }
        guard node.isVideoCapture else {
            throw CaptureError(.inputUnavailable, "\(path) (\(node.card)) is not a video-capture node: `cvhost devices` lists cameras")
        }
        let type = V4L2BufferType(deviceCaps: node.deviceCaps)
        guard let fd = V4L2Descriptor(path: path) else { throw V4L2IO.error(errno, "open", device: path) }
        self.node = node
        self.state = Locked(State(path: path, fd: fd))
        bufferType = type
        self.formats = V4L2FormatEnumeration.formats(fd: fd, type: bufferType)
        readBack()
    }

    /// The camera went away: close its descriptor so that the driver can let go of it.
    func releaseAfterUnplug() {
        state.withLock { s in
            s.fd.close()
            s.connected = false
        }
    }

    /// Looks for the camera (by unique id, on any /dev/videoN), opens it, and sets again the
    /// format, frame rate and controls set before. - Returns: false while it is not back.
    func reopenAfterUnplug() -> Bool {
        guard let node = V4L2Discovery.captureNodes().first(where: { $0.uniqueID == uniqueID }) else { return false }
        guard let fd = V4L2Descriptor(path: node.path) else { return false }
        let (chosen, controls) = state.withLock { s -> ((format: DeviceFormat, frameRate: Double)?, [(id: UInt32, value: Int64)]) in
            s.fd = fd
            s.path = node.path
            s.connected = true
            return (s.chosen, s.controlsSet)
        }
        connectionHealth.back()
        if let chosen { try? applyFormat(chosen.format, frameRate: chosen.frameRate) }
        for c in controls { try? V4L2Controls.set(fd: fd, id: c.id, value: c.value, device: node.path) }
        readBack()
        return true
    }

    /// Reads the current format and frame rate from the driver.
    private func readBack() {
        let fd = self.fd
        var f = v4l2_format()
        f.type = bufferType.rawValue
        guard V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_G_FMT, &f) == 0 else { return }
        let layout = V4L2Layout(f, type: bufferType)
        var p = v4l2_streamparm()
        p.type = bufferType.rawValue
        let rate: Double
        if V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_G_PARM, &p) == 0, p.parm.capture.timeperframe.numerator > 0 {
            rate = Double(p.parm.capture.timeperframe.denominator) / Double(p.parm.capture.timeperframe.numerator)
        } else {
            rate = 0
        }
        let w = layout.width, h = layout.height, fourcc = layout.fourcc
        // The active format as the device lists it (its own four-character code), when it does.
        let listed = formats.first { $0.width == w && $0.height == h && $0.deviceFourCC == V4L2IO.fourCC(fourcc) }
        // The active format carries the active frame rate only (the listed one carries all it offers).
        let rates = rate > 0 ? [FrameRateRange(minFrameRate: rate, maxFrameRate: rate)] : listed?.frameRateRanges ?? []
        state.withLock { s in
            s.active = DeviceFormat(deviceFourCC: listed?.deviceFourCC ?? V4L2IO.fourCC(fourcc),
                                    pixelFormat: V4L2FormatEnumeration.pixelFormat(for: fourcc), width: w, height: h,
                                    frameRateRanges: rates)
            s.delivered = layout
            s.frameRate = rate
        }
    }

    // MARK: - Formats

    public func setActiveFormat(_ format: DeviceFormat) throws {
        try setActiveFormat(format, frameRate: format.maxFrameRate)
    }

    /// Sets the format and frame rate (S_FMT, S_PARM) and reads both back. Requires the
    /// configuration lock.
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
        f.type = bufferType.rawValue
        let fourcc = V4L2IO.fourCC(format.deviceFourCC) ?? 0
        if bufferType.isMultiPlanar {
            // The driver fills in the planes (their number, bytes per line and sizes).
            f.fmt.pix_mp.width = UInt32(format.width)
            f.fmt.pix_mp.height = UInt32(format.height)
            f.fmt.pix_mp.pixelformat = fourcc
            f.fmt.pix_mp.field = V4L2_FIELD_NONE.rawValue
        } else {
            f.fmt.pix.width = UInt32(format.width)
            f.fmt.pix.height = UInt32(format.height)
            f.fmt.pix.pixelformat = fourcc
            f.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        }
        try V4L2IO.ioctl(fd, CV4L2Shim_VIDIOC_S_FMT, &f, "VIDIOC_S_FMT", device: path)
        if frameRate > 0 {
            var p = v4l2_streamparm()
            p.type = bufferType.rawValue
            // 1000/(rate*1000) keeps fractional rates such as 29.97.
            p.parm.capture.timeperframe = v4l2_fract(numerator: 1000, denominator: UInt32((frameRate * 1000).rounded()))
            _ = V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_S_PARM, &p)  // some drivers have no frame-rate control
        }
        readBack()
    }

    /// The layout of delivered frames, as the driver reported it.
    var deliveredLayout: V4L2Layout? { state.withLock { $0.delivered } }

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

    /// The value of a control already described (one of `controls`), as text; nil when unreadable.
    public func value(of info: V4L2ControlInfo) -> String? {
        guard let v = try? V4L2Controls.get(fd: fd, id: info.id, device: path) else { return nil }
        return V4L2Controls.describe(v, for: info)
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
        let stream = try V4L2Stream(device: self, layout: layout)
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
