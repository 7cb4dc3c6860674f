import CVHostPluginABI
import CWorkerIPC
import Glibc

/// Shared memory that carries one instance's frames to its worker process: a memfd, mapped here
/// for writing and in the worker read-only, registered with the worker once (per worker process)
/// and reused for every frame; replaced by a larger one when a frame does not fit. A frame is
/// copied in once (planes at 64-byte aligned offsets, rows as they are).
final class FrameSlot {
    let id: UInt32
    let fd: Int32
    let size: Int
    private let base: UnsafeMutableRawPointer
    /// The worker process that has it (its generation), if any.
    var registeredWith: UInt64?

    init(id: UInt32, size: Int) throws(PluginLoadError) {
        let fd = cvhost_memfd("cvhost-frames", size)
        guard fd >= 0 else {
            throw PluginLoadError(.createFailed, "cannot make shared memory for a plugin worker: \(String(cString: strerror(-fd)))")
        }
        guard let p = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), p != MAP_FAILED else {
            close(fd)
            throw PluginLoadError(.createFailed, "cannot map shared memory for a plugin worker: \(String(cString: strerror(errno)))")
        }
        self.id = id
        self.fd = fd
        self.size = size
        base = p
    }

    deinit {
        munmap(base, size)
        close(fd)
    }

    /// Bytes a frame needs in a slot.
    static func bytes(for frame: cvhost_frame) -> Int {
        withUnsafeBytes(of: frame.planes) { raw in
            raw.bindMemory(to: cvhost_plane.self).prefix(Int(min(frame.plane_count, 4))).reduce(0) { $0 + align(Int($1.length)) }
        }
    }

    private static func align(_ n: Int) -> Int { (n + 63) & ~63 }

    /// Copies the frame's planes in and points them at the copies instead: offsets into the slot
    /// (the worker adds its mapping's address), in this slot's memfd.
    func copy(into frame: inout cvhost_frame) {
        var offset = 0
        let count = Int(min(frame.plane_count, 4))
        withUnsafeMutableBytes(of: &frame.planes) { raw in
            let planes = raw.bindMemory(to: cvhost_plane.self)
            for i in 0..<count {
                let length = Int(planes[i].length)
                if let data = planes[i].data { (base + offset).copyMemory(from: data, byteCount: length) }
                planes[i].data = nil
                planes[i].fd = fd
                planes[i].offset = UInt64(offset)
                offset += FrameSlot.align(length)
            }
        }
    }
}
