import CV4L2Shim
import CVHostCore
import Glibc

/// What VIDIOC_QUERYCAP tells about one /dev/videoN node.
public struct V4L2NodeInfo: Sendable {
    public let path: String
    public let driver: String
    public let card: String
    public let busInfo: String
    public let deviceCaps: UInt32
    /// Stable across replugging: the /dev/v4l/by-id name when udev made one, else driver, card and bus.
    public let uniqueID: String

    /// The camera model (AVCaptureDevice.modelID): the same for two cameras of one kind.
    public var modelID: String { "\(driver):\(card)" }

    /// Video capture with streaming, through either buffer API (single- or multi-planar).
    public var isVideoCapture: Bool {
        deviceCaps & UInt32(V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_VIDEO_CAPTURE_MPLANE) != 0 && deviceCaps & UInt32(V4L2_CAP_STREAMING) != 0
    }
}

/// Finds V4L2 video-capture nodes (AVCaptureDevice.devices): every /dev/videoN in sysfs whose
/// device capabilities include video capture (single- or multi-planar) and streaming. Metadata-only and output nodes
/// (which UVC cameras and vivid also create) are left out.
public enum V4L2Discovery {
    public static func captureNodes() -> [V4L2NodeInfo] {
        let names = ((try? listDirectory("/sys/class/video4linux")) ?? []).filter { $0.hasPrefix("video") }
        let sorted = names.sorted { (Int($0.dropFirst(5)) ?? 0) < (Int($1.dropFirst(5)) ?? 0) }
        return sorted.compactMap { query("/dev/" + $0) }.filter(\.isVideoCapture)
    }

    /// QUERYCAP of one node; nil when it cannot be opened or is not V4L2.
    public static func query(_ path: String) -> V4L2NodeInfo? {
        guard let fd = V4L2Descriptor(path: path) else { return nil }
        var cap = v4l2_capability()
        guard V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_QUERYCAP, &cap) == 0 else { return nil }
        let caps = cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
        let driver = V4L2IO.string(cap.driver), card = V4L2IO.string(cap.card), bus = V4L2IO.string(cap.bus_info)
        return V4L2NodeInfo(path: path, driver: driver, card: card, busInfo: bus, deviceCaps: caps,
                            uniqueID: stableID(path: path) ?? "v4l2:\(driver):\(card):\(bus)")
    }

    /// The /dev/v4l/by-id link that points at `path`, if udev made one (it carries the USB serial).
    static func stableID(path: String) -> String? {
        let dir = "/dev/v4l/by-id"
        for name in (try? listDirectory(dir)) ?? [] {
            var buf = [CChar](repeating: 0, count: 4096)
            let n = readlink(dir + "/" + name, &buf, buf.count - 1)
            guard n > 0 else { continue }
            let target = String(decoding: buf.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if target.hasSuffix("/" + (path as String).split(separator: "/").last!) { return "v4l2-id:" + name }
        }
        return nil
    }

    static func listDirectory(_ path: String) throws -> [String] {
        guard let d = opendir(path) else { throw CaptureError(.inputUnavailable, "cannot list \(path)") }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
