import CV4L2Shim
import CVHostCore
import Glibc
import Synchronization

/// Frames of a streaming V4L2 camera: memory-mapped driver buffers, single- or multi-planar,
/// read by the layout the driver reported.
///
/// A frame the driver flags with an error, or that holds fewer bytes than its format needs, is
/// dropped and counted (`corrupt`), never handed on with stale data.
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
    private var layout: V4L2Layout
    private var pixelFormat: PixelFormat
    private var planes: [V4L2Layout.ImagePlane]
    /// The camera was unplugged and `device.reconnects` is on: waiting for it to come back.
    private var unplugged = false
    private let cancelled = Atomic(false)
    private var lastSequence: UInt32?
    private var lastFrameNs = HostClock.monotonicNs()
    private var stallReported = false
    private var firstTimestampNs: Int64?
    /// Damaged frames dropped since the last frame handed on.
    private var corruptSinceLast: UInt64 = 0

    init(device: V4L2CaptureDevice, layout: V4L2Layout) throws {
        self.device = device
        self.layout = layout
        (pixelFormat, planes) = try V4L2Stream.readable(layout, device: device.path)
        buffers = try V4L2Stream.startStreaming(device, layout: layout)
    }

    /// The pixel format and image planes of `layout`, or an error when cvhost cannot read it.
    private static func readable(_ layout: V4L2Layout, device: String) throws -> (PixelFormat, [V4L2Layout.ImagePlane]) {
        guard let format = layout.pixelFormat, let planes = layout.imagePlanes(format) else {
            throw CaptureError(.unsupported, "\(device) reports a \(V4L2IO.fourCC(layout.fourcc)) \(layout.width)x\(layout.height) layout "
                               + "cvhost cannot read (\(layout.memoryPlanes.map { "\($0.bytesPerLine) bytes a line, \($0.sizeImage) bytes" }))")
        }
        return (format, planes)
    }

    private static func startStreaming(_ device: V4L2CaptureDevice, layout: V4L2Layout) throws -> V4L2BufferSet {
        let buffers = try V4L2BufferSet(fd: device.fd, count: V4L2Stream.bufferCount, type: device.bufferType,
                                        planeCount: layout.memoryPlanes.count, device: device.path)
        var type = device.bufferType.rawValue
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
                guard let back = device.deliveredLayout else {
                    throw CaptureError(.unsupported, "\(device.path) came back with a format cvhost cannot read")
                }
                (pixelFormat, planes) = try V4L2Stream.readable(back, device: device.path)
                layout = back
                buffers = try V4L2Stream.startStreaming(device, layout: layout)
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
            if ready < 0 { throw failure(-ready, "poll") }
            if ready == 0 {
                let idle = Double(HostClock.monotonicNs() - lastFrameNs) / 1e9
                if idle >= V4L2Stream.stallSeconds && !stallReported {
                    stallReported = true
                    throw CaptureInterruption(reason: "no frames from \(device.path) for \(Int(idle)) s")
                }
                continue
            }
            let (rc, buf, planeInfo) = buffers.ioctl(CV4L2Shim_VIDIOC_DQBUF, index: 0)
            if rc != 0 {
                if rc == EAGAIN { continue }
                throw failure(rc, "VIDIOC_DQBUF")
            }
            buffers.dequeued()
            lastFrameNs = HostClock.monotonicNs()
            stallReported = false
            var lost: UInt64 = 0
            if let last = lastSequence, buf.sequence > last &+ 1 { lost = UInt64(buf.sequence &- last &- 1) }
            lastSequence = buf.sequence
            // What the driver filled in each memory plane (multi-planar: from data_offset on).
            let filled: [(start: Int, used: Int)] = buffers.type.isMultiPlanar
                ? planeInfo.map { (Int($0.data_offset), Int($0.bytesused) - Int($0.data_offset)) }
                : [(0, Int(buf.bytesused))]
            let short = planes.contains { p in
                p.memoryPlane >= filled.count || filled[p.memoryPlane].used < p.needed
                    || filled[p.memoryPlane].start + p.needed > buffers.mapping(of: Int(buf.index), plane: p.memoryPlane).length
            }
            if buf.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 || short {
                buffers.requeue(Int(buf.index))
                corruptSinceLast += 1
                continue
            }
            let corrupt = corruptSinceLast
            corruptSinceLast = 0
            let captured = driverTime(buf)
            return CapturedFrame(pixelBuffer: pixels(of: Int(buf.index), filled: filled), presentationTimeNs: presentationTime(buf),
                                 captureTimeNs: captured?.wall, framesLostBefore: lost, corruptBefore: corrupt,
                                 monotonicCaptureNs: captured?.monotonic)
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

    /// When the driver captured the frame: its timestamp (CLOCK_MONOTONIC for almost every
    /// driver), and the same moment on the wall clock. nil when the driver stamps another clock.
    private func driverTime(_ buf: v4l2_buffer) -> (monotonic: UInt64, wall: Int64)? {
        guard buf.flags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK) == UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC) else { return nil }
        let ts = Int64(buf.timestamp.tv_sec) * 1_000_000_000 + Int64(buf.timestamp.tv_usec) * 1000
        let now = Int64(HostClock.monotonicNs())
        guard ts > 0, ts <= now else { return nil }
        return (UInt64(ts), HostClock.wallNs() - (now - ts))
    }

    private func presentationTime(_ buf: v4l2_buffer) -> Int64 {
        let ts = Int64(buf.timestamp.tv_sec) * 1_000_000_000 + Int64(buf.timestamp.tv_usec) * 1000
        if firstTimestampNs == nil { firstTimestampNs = ts }
        return ts - firstTimestampNs!
    }

    /// Buffer `index` as a pixel buffer, its planes where the layout puts them (within the bytes filled).
    private func pixels(of index: Int, filled: [(start: Int, used: Int)]) -> PixelBuffer {
        let planes = self.planes.map { p in
            PixelBuffer.Plane(base: UnsafeRawPointer(buffers.mapping(of: index, plane: p.memoryPlane).address + filled[p.memoryPlane].start + p.offset),
                              bytesPerRow: p.bytesPerRow, rows: p.rows, samplesPerRow: p.samplesPerRow)
        }
        let width = layout.width, height = layout.height
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
