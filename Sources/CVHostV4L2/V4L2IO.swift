import CV4L2Shim
import CVHostCore
import Glibc

/// The one path for V4L2 ioctls: calls again one a signal interrupted and reads errno right after
/// the call (both in the C shim, as SystemCall does for Swift's calls), and turns failures into
/// `CaptureError`s that name the call, the device and the errno.
enum V4L2IO {
    /// Calls `ioctl(fd, request, &arg)`.
    /// - Throws: `CaptureError` (`.deviceBusy` for EBUSY, `.streamFailed` for ENODEV, `.unsupported` for EINVAL/ENOTTY).
    static func ioctl<T>(_ fd: V4L2Descriptor, _ request: UInt, _ arg: inout T, _ name: String, device: String) throws {
        let code = tryIoctl(fd, request, &arg)
        if code != 0 { throw error(code, name, device: device) }
    }

    /// Like `ioctl`, but returns the errno (0: done) instead of throwing (for enumerations that end with EINVAL).
    static func tryIoctl<T>(_ fd: V4L2Descriptor, _ request: UInt, _ arg: inout T) -> Int32 {
        withUnsafeMutablePointer(to: &arg) { fd.ioctl(request, UnsafeMutableRawPointer($0)) }
    }

    static func error(_ code: Int32, _ call: String, device: String) -> CaptureError {
        let text = Errno(rawValue: code).description
        switch code {
        case EBUSY:
            return CaptureError(.deviceBusy, "\(device) is busy (\(call): \(text)): another program is using the camera")
        case ENODEV, ENXIO:
            return CaptureError(.streamFailed, "\(device) was disconnected (\(call): \(text))")
        case EINVAL, ENOTTY:
            return CaptureError(.unsupported, "\(device) does not support \(call) (\(text))")
        case EACCES, EPERM:
            return CaptureError(.inputUnavailable, "\(device): permission denied (\(call)); add yourself to the 'video' group")
        default:
            return CaptureError(.streamFailed, "\(device): \(call) failed", cause: Errno(rawValue: code))
        }
    }

    /// A fixed-size C char array (a tuple) as a String.
    static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// A four-character code as text, e.g. "YUYV".
    static func fourCC(_ v: UInt32) -> String {
        String(decoding: [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0x7F)], as: UTF8.self)
            .trimmingCharacters(in: [" "])
    }

    static func fourCC(_ s: String) -> UInt32? {
        let b = Array(s.utf8)
        guard b.count >= 1, b.count <= 4 else { return nil }
        let p = b + Array(repeating: UInt8(ascii: " "), count: 4 - b.count)
        return UInt32(p[0]) | UInt32(p[1]) << 8 | UInt32(p[2]) << 16 | UInt32(p[3]) << 24
    }
}

extension String {
    func trimmingCharacters(in set: Set<Character>) -> String {
        var s = Substring(self)
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
