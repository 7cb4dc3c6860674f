import CV4L2Shim
import CVHostCore
import Glibc
import Synchronization

/// The driver's mapped buffers. Lives until the stream is closed and no frame uses a buffer.
final class V4L2BufferSet: @unchecked Sendable {
    // @unchecked Sendable: mappings are fixed after init; counters are behind `state`.
    private let fd: Int32
    private let device: String
    private let mappings: [(address: UnsafeMutableRawPointer, length: Int)]
    /// `gone`: the camera was unplugged and its descriptor closed; the number may already belong
    /// to a newly opened device, so nothing may be asked of it any more.
    private let state = Mutex<(queued: Int, stopped: Bool, copies: UInt64, gone: Bool)>((0, false, 0, false))

    init(fd: Int32, count: UInt32, device: String) throws {
        self.fd = fd
        self.device = device
        var req = v4l2_requestbuffers()
        req.count = count
        req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        try V4L2IO.ioctl(fd, CV4L2Shim_VIDIOC_REQBUFS, &req, "VIDIOC_REQBUFS", device: device)
        guard req.count >= 2 else { throw CaptureError(.streamFailed, "\(device) gave \(req.count) buffers; 2 or more are needed") }
        var maps: [(UnsafeMutableRawPointer, Int)] = []
        for i in 0..<req.count {
            var buf = v4l2_buffer()
            buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buf.memory = V4L2_MEMORY_MMAP.rawValue
            buf.index = i
            try V4L2IO.ioctl(fd, CV4L2Shim_VIDIOC_QUERYBUF, &buf, "VIDIOC_QUERYBUF", device: device)
            guard let p = CV4L2Shim_mmap(Int(buf.length), fd, Int64(buf.m.offset)), p != UnsafeMutableRawPointer(bitPattern: -1) else {
                maps.forEach { _ = CV4L2Shim_munmap($0.0, $0.1) }
                throw V4L2IO.error(errno, "mmap", device: device)
            }
            maps.append((p, Int(buf.length)))
        }
        mappings = maps
        for i in 0..<maps.count { requeue(i) }
    }

    deinit {
        for m in mappings { _ = CV4L2Shim_munmap(m.address, m.length) }
        if state.withLock({ $0.gone }) { return }
        var req = v4l2_requestbuffers()
        req.count = 0
        req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        _ = V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_REQBUFS, &req)
    }

    func address(of index: Int) -> UnsafeMutableRawPointer { mappings[index].address }
    func length(of index: Int) -> Int { mappings[index].length }
    var queuedCount: Int { state.withLock { $0.queued } }
    var starvationCopies: UInt64 { state.withLock { $0.copies } }
    func countStarvationCopy() { state.withLock { $0.copies += 1 } }
    func dequeued() { state.withLock { $0.queued -= 1 } }

    /// Gives buffer `index` back to the driver (from any thread); nothing once the stream stopped.
    func requeue(_ index: Int) {
        state.withLock { s in
            guard !s.stopped else { return }
            var buf = v4l2_buffer()
            buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buf.memory = V4L2_MEMORY_MMAP.rawValue
            buf.index = UInt32(index)
            if V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_QBUF, &buf) == 0 { s.queued += 1 }
        }
    }

    /// Stops giving buffers back. `deviceGone`: the camera was unplugged (no ioctl is made).
    func shutDown(streamOff: Bool, deviceGone: Bool = false) {
        state.withLock { s in
            s.stopped = true
            s.gone = s.gone || deviceGone
            if streamOff && !s.gone {
                var type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
                _ = V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_STREAMOFF, &type)
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
