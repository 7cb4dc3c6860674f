import Glibc
import Testing
@testable import CVHostV4L2

/// The hot-plug monitor's reading of inotify's byte stream (the monitor itself is tested on a
/// real driver in the vivid VM: EndToEndTests/CameraTests).
@Suite("Hot-plug: inotify events")
struct DeviceMonitorTests {
    /// One event as the kernel writes it: wd, mask, cookie, len, then the name NUL-padded to len.
    static func event(_ name: String, mask: Int32, padTo len: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        for field in [UInt32(1), UInt32(bitPattern: mask), 0, UInt32(len)] { withUnsafeBytes(of: field.littleEndian) { bytes += $0 } }
        return bytes + Array(name.utf8) + [UInt8](repeating: 0, count: len - name.utf8.count)
    }

    @Test("names and masks of a batch; a cut-off event at the end is ignored")
    func parsing() {
        let batch = Self.event("video2", mask: IN_CREATE, padTo: 16) + Self.event("hidraw0", mask: IN_DELETE, padTo: 16)
            + Self.event("video10", mask: IN_DELETE, padTo: 32)
        let events = V4L2DeviceMonitor.events(batch[...])
        #expect(events.map(\.name) == ["video2", "hidraw0", "video10"])
        #expect(events.map(\.mask) == [UInt32(IN_CREATE), UInt32(IN_DELETE), UInt32(IN_DELETE)])
        let cut = batch + Self.event("video3", mask: IN_CREATE, padTo: 16).prefix(10)
        #expect(V4L2DeviceMonitor.events(cut[...]).count == 3)
    }
}
