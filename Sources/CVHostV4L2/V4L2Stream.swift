import CV4L2Shim
import CVHostCore
import Glibc
import Synchronization

/// Frames of a streaming V4L2 camera: memory-mapped driver buffers.
///
/// A frame is handed to plugins without a copy; its driver buffer goes back to the driver
/// (QBUF) as soon as the last plugin lets go of it. When plugins hold so many buffers that the
/// driver would be left with fewer than `minimumQueued` to fill, the frame is copied instead and
/// its buffer returned at once, so the camera never starves; those copies are counted.
final class V4L2Stream: FrameStream, @unchecked Sendable {
    // @unchecked Sendable: `next()` runs on the capture thread only; shared state is in `buffers`
    // (behind its Mutex) and in atomics.
    static let bufferCount: UInt32 = 6
    static let minimumQueued = 2
    /// No frame for this long is reported as an interruption.
    static let stallSeconds = 2.0

    private let device: V4L2CaptureDevice
    /// nil while the camera is unplugged: its mappings must not keep the driver in use.
    private var buffers: V4L2BufferSet!
    private var pixelFormat: PixelFormat
    private var width: Int, height: Int, bytesPerLine: Int
    /// The camera was unplugged and `device.reconnects` is on: waiting for it to come back.
    private var unplugged = false
    private let cancelled = Atomic(false)
    private var lastSequence: UInt32?
    private var lastFrameNs = HostClock.monotonicNs()
    private var stallReported = false
    private var firstTimestampNs: Int64?

    init(device: V4L2CaptureDevice, pixelFormat: PixelFormat, width: Int, height: Int, bytesPerLine: Int) throws {
        self.device = device
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.bytesPerLine = bytesPerLine
        buffers = try V4L2Stream.startStreaming(device)
    }

    private static func startStreaming(_ device: V4L2CaptureDevice) throws -> V4L2BufferSet {
        let buffers = try V4L2BufferSet(fd: device.fd, count: V4L2Stream.bufferCount, device: device.path)
        var type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        do {
            try V4L2IO.ioctl(device.fd, CV4L2Shim_VIDIOC_STREAMON, &type, "VIDIOC_STREAMON", device: device.path)
        } catch {
            buffers.shutDown(streamOff: false)
            throw error
        }
        return buffers
    }

    /// Waits (in slices, so that cancel() is noticed) for the unplugged camera to come back, and
    /// streams it again. - Returns: false when cancelled first.
    private func resumeAfterUnplug() throws -> Bool {
        while !cancelled.load(ordering: .relaxed) {
            if device.reopenAfterUnplug() {
                guard let layout = device.deliveredLayout, let format = layout.format else {
                    throw CaptureError(.unsupported, "\(device.path) came back with a format cvhost cannot read")
                }
                (pixelFormat, width, height, bytesPerLine) = (format, layout.width, layout.height, layout.bytesPerLine)
                buffers = try V4L2Stream.startStreaming(device)
                unplugged = false
                lastSequence = nil
                lastFrameNs = HostClock.monotonicNs()
                return true
            }
            usleep(250_000)
        }
        return false
    }

    func next() throws -> CapturedFrame? {
        if unplugged, try !resumeAfterUnplug() { return nil }
        while !cancelled.load(ordering: .relaxed) {
            let ready = CV4L2Shim_wait_readable(device.fd, 200)
            if ready < 0 { throw failure(errno, "poll") }
            if ready == 0 {
                let idle = Double(HostClock.monotonicNs() - lastFrameNs) / 1e9
                if idle >= V4L2Stream.stallSeconds && !stallReported {
                    stallReported = true
                    throw CaptureInterruption(reason: "no frames from \(device.path) for \(Int(idle)) s")
                }
                continue
            }
            var buf = v4l2_buffer()
            buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buf.memory = V4L2_MEMORY_MMAP.rawValue
            if V4L2IO.tryIoctl(device.fd, CV4L2Shim_VIDIOC_DQBUF, &buf) != 0 {
                let code = errno
                if code == EAGAIN { continue }
                throw failure(code, "VIDIOC_DQBUF")
            }
            buffers.dequeued()
            lastFrameNs = HostClock.monotonicNs()
            stallReported = false
            if buf.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 || buf.bytesused == 0 {
                buffers.requeue(Int(buf.index))  // a damaged frame: the driver said so
                continue
            }
            var lost: UInt64 = 0
            if let last = lastSequence, buf.sequence > last &+ 1 { lost = UInt64(buf.sequence &- last &- 1) }
            lastSequence = buf.sequence
            return CapturedFrame(pixelBuffer: try pixels(of: buf), presentationTimeNs: presentationTime(buf),
                                 captureTimeNs: wallClock(buf), framesLostBefore: lost)
        }
        return nil
    }

    private func failure(_ code: Int32, _ call: String) -> Error {
        let e = V4L2IO.error(code, call, device: device.path)
        if code == ENODEV || code == ENXIO {
            if device.reconnects {
                // Let go of the camera at once (the driver cannot be reloaded while it is open),
                // and wait for it to come back on the next call.
                buffers.shutDown(streamOff: false, deviceGone: true)
                buffers = nil  // frames plugins still hold keep their mapping until released
                let path = device.path
                device.releaseAfterUnplug()
                unplugged = true
                return CaptureInterruption(reason: "\(path) (\(device.localizedName)) was disconnected; waiting for it to come back")
            }
            device.streamEnded(disconnected: true)
            return CaptureError(.disconnected, "\(device.path) (\(device.localizedName)) was disconnected")
        }
        return e
    }

    /// The driver's timestamp (CLOCK_MONOTONIC for almost every driver) on the wall clock.
    private func wallClock(_ buf: v4l2_buffer) -> Int64? {
        guard buf.flags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK) == UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC) else { return nil }
        let ts = Int64(buf.timestamp.tv_sec) * 1_000_000_000 + Int64(buf.timestamp.tv_usec) * 1000
        let age = Int64(HostClock.monotonicNs()) - ts
        return HostClock.wallNs() - max(0, age)
    }

    private func presentationTime(_ buf: v4l2_buffer) -> Int64 {
        let ts = Int64(buf.timestamp.tv_sec) * 1_000_000_000 + Int64(buf.timestamp.tv_usec) * 1000
        if firstTimestampNs == nil { firstTimestampNs = ts }
        return ts - firstTimestampNs!
    }

    private func pixels(of buf: v4l2_buffer) throws -> PixelBuffer {
        let index = Int(buf.index)
        let base = buffers.address(of: index)
        let layout = pixelFormat.planeLayout(width: width, height: height)
        // Planes follow each other in the buffer; chroma rows of planar formats are half as long.
        var planes: [PixelBuffer.Plane] = []
        var offset = 0
        for (i, p) in layout.enumerated() {
            let stride = i == 0 || pixelFormat == .nv12 ? bytesPerLine : bytesPerLine / 2
            planes.append(PixelBuffer.Plane(base: UnsafeRawPointer(base + offset), bytesPerRow: stride, rows: p.rows,
                                            samplesPerRow: p.samplesPerRow))
            offset += stride * p.rows
        }
        guard offset <= buffers.length(of: index) else {
            buffers.requeue(index)
            throw CaptureError(.streamFailed, "\(device.path) delivered a \(buffers.length(of: index))-byte buffer, \(offset) needed")
        }
        if buffers.queuedCount >= V4L2Stream.minimumQueued {
            let lease = V4L2BufferLease(set: buffers, index: index)
            return PixelBuffer(format: pixelFormat, width: width, height: height, planes: planes, owner: lease)
        }
        // Plugins hold nearly every buffer: copy this frame and give its buffer straight back.
        buffers.countStarvationCopy()
        let wrapped = PixelBuffer(format: pixelFormat, width: width, height: height, planes: planes, owner: buffers)
        let copy = PixelBuffer.allocate(format: pixelFormat, width: width, height: height) { dst, strides in
            for (i, p) in wrapped.planes.enumerated() {
                for row in 0..<p.rows {
                    (dst[i] + row * strides[i]).copyMemory(from: p.base + row * p.bytesPerRow, byteCount: min(strides[i], p.bytesPerRow))
                }
            }
        }
        buffers.requeue(index)
        return copy
    }

    func cancel() { cancelled.store(true, ordering: .relaxed) }

    func close() {
        guard let buffers else { return device.streamEnded(disconnected: false) }
        buffers.shutDown(streamOff: true)
        let copies = buffers.starvationCopies
        if copies > 0 {
            // Not an error: frames were copied so that the driver always had buffers to fill.
            Log.info("\(device.path): \(copies) frames copied because plugins held the driver's buffers")
        }
        device.streamEnded(disconnected: false)
    }
}
