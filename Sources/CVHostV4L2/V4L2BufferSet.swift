import CV4L2Shim
import CVHostCore
import Glibc

/// The driver's mapped buffers: for each buffer, one mapping per memory plane (one in the
/// single-planar API). Lives until the stream is closed and no frame uses a buffer.
final class V4L2BufferSet: @unchecked Sendable {
    // @unchecked Sendable: mappings are fixed after init; counters are behind `state`.
    private let fd: V4L2Descriptor
    private let device: String
    let type: V4L2BufferType
    /// Memory planes per buffer (1 in the single-planar API).
    let planeCount: Int
    private let mappings: [[(address: UnsafeMutableRawPointer, length: Int)]]
    /// Each mapping as a dmabuf another process can map (VIDIOC_EXPBUF), when a plugin runs in a
    /// worker process and the driver can export it; nil otherwise (the worker gets a copy).
    private let exports: [[SharedMemory?]]
    private let state = Locked<(queued: Int, stopped: Bool, copies: UInt64)>((0, false, 0))

    init(fd: V4L2Descriptor, count: UInt32, type: V4L2BufferType, planeCount: Int, device: String) throws {
        self.fd = fd
        self.device = device
        self.type = type
        self.planeCount = type.isMultiPlanar ? max(1, min(planeCount, Int(VIDEO_MAX_PLANES))) : 1
        var req = v4l2_requestbuffers()
        req.count = count
        req.type = type.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        try V4L2IO.ioctl(fd, CV4L2Shim_VIDIOC_REQBUFS, &req, "VIDIOC_REQBUFS", device: device)
        guard req.count >= 2 else { throw CaptureError(.streamFailed, "\(device) gave \(req.count) buffers; 2 or more are needed") }
        var maps: [[(UnsafeMutableRawPointer, Int)]] = []
        func unmapAll() { maps.joined().forEach { _ = munmap($0.0, $0.1) } }
        for i in 0..<req.count {
            let (rc, buf, planes) = V4L2BufferSet.ioctl(fd, CV4L2Shim_VIDIOC_QUERYBUF, type: type, planeCount: self.planeCount, index: i)
            guard rc == 0 else {
                unmapAll()
                throw V4L2IO.error(rc, "VIDIOC_QUERYBUF", device: device)
            }
            let located: [(length: Int, offset: Int64)] = type.isMultiPlanar ? planes.map { (Int($0.length), Int64($0.m.mem_offset)) }
                : [(Int(buf.length), Int64(buf.m.offset))]
            var bufferMaps: [(UnsafeMutableRawPointer, Int)] = []
            for plane in located {
                switch fd.map(length: plane.length, offset: plane.offset) {
                case .success(let address):
                    bufferMaps.append((address, plane.length))
                case .failure(let e):
                    bufferMaps.forEach { _ = munmap($0.0, $0.1) }
                    unmapAll()
                    throw V4L2IO.error(e.code, "mmap", device: device)
                }
            }
            maps.append(bufferMaps)
        }
        mappings = maps
        let share = SharedMemoryPool.shared.isEnabled
        exports = maps.indices.map { i in
            maps[i].indices.map { plane in
                share ? V4L2BufferSet.exportPlane(fd, type: type, index: i, plane: plane, length: maps[i][plane].1) : nil
            }
        }
        for i in 0..<maps.count { requeue(i) }
    }

    /// Memory plane `plane` of buffer `index` as a read-only dmabuf; nil when the driver cannot
    /// export it (EXPBUF needs videobuf2; its memory must allow it).
    private static func exportPlane(_ fd: V4L2Descriptor, type: V4L2BufferType, index: Int, plane: Int, length: Int) -> SharedMemory? {
        var e = v4l2_exportbuffer()
        e.type = type.rawValue
        e.index = UInt32(index)
        e.plane = UInt32(plane)
        e.flags = UInt32(O_RDONLY | O_CLOEXEC)
        guard V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_EXPBUF, &e) == 0, e.fd >= 0 else { return nil }
        return SharedMemory(adopting: e.fd, size: length)
    }

    /// Makes a buffer request (QUERYBUF, QBUF, DQBUF) about buffer `index` (MMAP memory), with
    /// the plane array the multi-planar API needs.
    /// - Returns: the errno (0: done), the buffer as the driver filled it in, and its planes
    ///   (as many as the driver says; none in the single-planar API).
    static func ioctl(_ fd: V4L2Descriptor, _ request: UInt, type: V4L2BufferType, planeCount: Int,
                      index: UInt32) -> (errno: Int32, buffer: v4l2_buffer, planes: [v4l2_plane]) {
        var buf = v4l2_buffer()
        buf.type = type.rawValue
        buf.memory = V4L2_MEMORY_MMAP.rawValue
        buf.index = index
        guard type.isMultiPlanar else {
            let rc = V4L2IO.tryIoctl(fd, request, &buf)
            return (rc, buf, [])
        }
        var planes = [v4l2_plane](repeating: v4l2_plane(), count: planeCount)
        let rc = planes.withUnsafeMutableBufferPointer { p in
            buf.m.planes = p.baseAddress
            buf.length = UInt32(p.count)
            return V4L2IO.tryIoctl(fd, request, &buf)
        }
        buf.m.planes = nil  // pointed into `planes`, which does not outlive this call
        return (rc, buf, Array(planes.prefix(Int(buf.length))))
    }

    /// `ioctl` on this set's descriptor, type and planes.
    func ioctl(_ request: UInt, index: UInt32) -> (errno: Int32, buffer: v4l2_buffer, planes: [v4l2_plane]) {
        V4L2BufferSet.ioctl(fd, request, type: type, planeCount: planeCount, index: index)
    }

    deinit {
        for m in mappings.joined() { _ = munmap(m.address, m.length) }
        // Frees the driver's buffers (EBADF, harmless, when the camera was unplugged meanwhile).
        var req = v4l2_requestbuffers()
        req.count = 0
        req.type = type.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        _ = V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_REQBUFS, &req)
    }

    /// Memory plane `plane` of buffer `index`.
    func mapping(of index: Int, plane: Int) -> (address: UnsafeMutableRawPointer, length: Int) { mappings[index][plane] }
    /// Memory plane `plane` of buffer `index` as shared memory, if it was exported.
    func export(of index: Int, plane: Int) -> SharedMemory? { exports[index][plane] }
    var queuedCount: Int { state.withLock { $0.queued } }
    var starvationCopies: UInt64 { state.withLock { $0.copies } }
    func countStarvationCopy() { state.withLock { $0.copies += 1 } }
    func dequeued() { state.withLock { $0.queued -= 1 } }

    /// Gives buffer `index` back to the driver (from any thread); nothing once the stream stopped.
    func requeue(_ index: Int) {
        state.withLock { s in
            guard !s.stopped else { return }
            if ioctl(CV4L2Shim_VIDIOC_QBUF, index: UInt32(index)).errno == 0 { s.queued += 1 }
        }
    }

    /// Stops giving buffers back, and stops the stream when asked.
    func shutDown(streamOff: Bool) {
        state.withLock { s in
            s.stopped = true
            if streamOff {
                var raw = type.rawValue
                _ = V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_STREAMOFF, &raw)
            }
        }
    }
}

/// One frame's hold on a driver buffer: the buffer goes back to the driver when the last pixel
/// buffer using it is released. It also keeps the mappings alive.
final class V4L2BufferLease {
    let set: V4L2BufferSet
    let index: Int

    init(set: V4L2BufferSet, index: Int) {
        self.set = set
        self.index = index
    }

    deinit { set.requeue(index) }
}
