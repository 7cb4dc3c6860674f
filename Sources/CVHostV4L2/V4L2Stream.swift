import CV4L2Shim
import CVHostCore
import Glibc
import Synchronization

/// Frames of a streaming V4L2 camera: memory-mapped driver buffers, single- or multi-planar,
/// read by the layout the driver reported; MJPEG frames decoded by `MJPEGDecoder`, Bayer and
/// vendor formats converted by `V4L2FormatConverter`.
///
/// A frame the driver flags with an error, that holds fewer bytes than its format needs, or
/// that its decoder or converter refuses, is dropped and counted (`corrupt`), never handed on
/// with stale data.
///
/// A raw frame is handed to plugins without a copy; its driver buffer goes back to the driver
/// (QBUF) as soon as the last plugin lets go of it. When plugins hold so many buffers that the
/// driver would be left with fewer than `minimumQueued` to fill, the frame is copied instead and
/// its buffer returned at once, so the camera never starves; those copies are counted. A
/// decoded or converted frame is new memory: its buffer goes back at once.
final class V4L2Stream: FrameStream, @unchecked Sendable {
    // @unchecked Sendable: `next()` runs on the capture thread only; shared state is in `buffers`
    // (behind its lock) and in atomics.
    static let bufferCount: UInt32 = 6
    static let minimumQueued = 2
    /// No frame for this long is reported as an interruption.
    static let stallSeconds = 2.0

    /// How a layout's frames become pixel buffers.
    private enum Reading {
        /// The driver's planes, read where the layout puts them.
        case planes(PixelFormat, [V4L2Layout.ImagePlane])
        case jpeg(MJPEGDecoder)
        case converted(V4L2FormatConverter)
    }

    private let device: V4L2CaptureDevice
    /// nil while the camera is unplugged: its mappings must not keep the driver in use.
    private var buffers: V4L2BufferSet!
    private var layout: V4L2Layout
    /// nil while the camera is unplugged (a converter would keep the closed descriptor's number).
    private var reading: Reading!
    /// The camera was unplugged and `device.reconnects` is on: waiting for it to come back.
    private var unplugged = false
    private let cancelled = Atomic(false)
    private var lastSequence: UInt32?
    private var lastFrameNs = HostClock.monotonicNs()
    private var stallReported = false
    private var firstTimestampNs: Int64?
    /// Damaged frames dropped since the last frame handed on.
    private var corruptSinceLast: UInt64 = 0
    /// Frames the driver skipped (gaps in its sequence numbers) since the last frame handed on.
    private var lostBefore: UInt64 = 0

    init(device: V4L2CaptureDevice, layout: V4L2Layout) throws {
        self.device = device
        self.layout = layout
        reading = try V4L2Stream.reading(layout, device: device)
        buffers = try V4L2Stream.startStreaming(device, layout: layout)
    }

    /// How to read `layout`'s frames, or an error when cvhost cannot.
    private static func reading(_ layout: V4L2Layout, device: V4L2CaptureDevice) throws -> Reading {
        if layout.isJPEG { return .jpeg(try MJPEGDecoder(width: layout.width, height: layout.height, device: device.path)) }
        guard let format = layout.pixelFormat else {
            return .converted(try V4L2FormatConverter(layout: layout, descriptor: device.fd, type: device.bufferType, device: device.path))
        }
        guard let planes = layout.imagePlanes(format) else {
            throw CaptureError(.unsupported, "\(device.path) reports a \(V4L2IO.fourCC(layout.fourcc)) \(layout.width)x\(layout.height) layout "
                               + "cvhost cannot read (\(layout.memoryPlanes.map { "\($0.bytesPerLine) bytes a line, \($0.sizeImage) bytes" }))")
        }
        return .planes(format, planes)
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
                reading = try V4L2Stream.reading(back, device: device)
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
            let ready = device.fd.waitReadable(timeoutMs: 200)
            if ready < 0 { throw lost(-ready, "poll") }
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
                throw lost(rc, "VIDIOC_DQBUF")
            }
            buffers.dequeued()
            lastFrameNs = HostClock.monotonicNs()
            if FrameTrace.enabled { FrameTrace.mark(ptsNs: presentationTime(buf), "dequeued", atNs: lastFrameNs) }
            stallReported = false
            if let last = lastSequence, buf.sequence > last &+ 1 { lostBefore += UInt64(buf.sequence &- last &- 1) }
            lastSequence = buf.sequence
            let index = Int(buf.index)
            // What the driver filled in each memory plane (multi-planar: from data_offset on).
            let filled: [(start: Int, used: Int)] = buffers.type.isMultiPlanar
                ? planeInfo.map { (Int($0.data_offset), Int($0.bytesused) - Int($0.data_offset)) }
                : [(0, Int(buf.bytesused))]
            if buf.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 {
                drop(index, "the driver flagged frame \(buf.sequence) with an error")
                continue
            }
            switch reading! {
            case .planes(let format, let planes):
                let short = planes.contains { p in
                    p.memoryPlane >= filled.count || filled[p.memoryPlane].used < p.needed
                        || filled[p.memoryPlane].start + p.needed > buffers.mapping(of: index, plane: p.memoryPlane).length
                }
                if short {
                    drop(index, "frame \(buf.sequence) is shorter than its format")
                    continue
                }
                return frame(pixels(of: index, format: format, planes: planes, filled: filled), buf)
            case .jpeg(let decoder):
                let outcome = decoder.decode(bytes(of: index, filled: filled))
                buffers.requeue(index)  // decoded into FFmpeg's own frame
                switch outcome {
                case .frame(let pixels): return frame(pixels, buf)
                case .corrupt(let why): dropped("MJPEG frame \(buf.sequence): \(why)")
                }
            case .converted(let converter):
                let outcome = try converter.convert(bytes(of: index, filled: filled))
                buffers.requeue(index)  // converted into a buffer of its own
                switch outcome {
                case .frame(let pixels): return frame(pixels, buf)
                case .corrupt(let why): dropped("frame \(buf.sequence) not converted: \(why)")
                }
            }
        }
        return nil
    }

    /// What the driver filled in the first memory plane of buffer `index` (a JPEG, a Bayer frame).
    private func bytes(of index: Int, filled: [(start: Int, used: Int)]) -> UnsafeRawBufferPointer {
        let mapping = buffers.mapping(of: index, plane: 0)
        let (start, used) = filled[0]
        return UnsafeRawBufferPointer(start: mapping.address + start, count: max(0, min(used, mapping.length - start)))
    }

    /// Gives buffer `index` back unread and counts its frame as corrupt.
    private func drop(_ index: Int, _ why: String) {
        buffers.requeue(index)
        dropped(why)
    }

    private func dropped(_ why: String) {
        Log.debug("\(device.path): dropped: \(why)")
        corruptSinceLast += 1
    }

    /// A frame to hand on, with the driver's time and what was lost before it.
    private func frame(_ pixels: PixelBuffer, _ buf: v4l2_buffer) -> CapturedFrame {
        let (corrupt, lost) = (corruptSinceLast, lostBefore)
        (corruptSinceLast, lostBefore) = (0, 0)
        let captured = driverTime(buf)
        return CapturedFrame(pixelBuffer: pixels, presentationTimeNs: presentationTime(buf), captureTimeNs: captured?.wall,
                             framesLostBefore: lost, corruptBefore: corrupt, monotonicCaptureNs: captured?.monotonic)
    }

    /// The stream failed with `code` in `call`: the error to throw. A camera that went away is let
    /// go of first (see `letGo`).
    private func lost(_ code: Int32, _ call: String) -> Error {
        guard code == ENODEV || code == ENXIO else { return V4L2IO.error(code, call, device: device.path) }
        let (path, name) = (device.path, device.localizedName)
        letGo(waitingForReturn: device.reconnects)
        if unplugged {
            device.connectionHealth.away("\(path) (\(name)) was disconnected")
            return CaptureInterruption(reason: "\(path) (\(name)) was disconnected; waiting for it to come back")
        }
        return CaptureError(.disconnected, "\(path) (\(name)) was disconnected")
    }

    /// The camera went away. Waiting for its return, its descriptor is closed and its buffers
    /// dropped at once (the driver cannot be reloaded or the camera re-enumerated while it is
    /// open; frames plugins still hold keep their mappings until released); else the stream ends.
    private func letGo(waitingForReturn: Bool) {
        guard waitingForReturn else { return device.streamEnded(disconnected: true) }
        buffers.shutDown(streamOff: false)
        buffers = nil
        reading = nil
        device.releaseAfterUnplug()
        unplugged = true
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
    private func pixels(of index: Int, format pixelFormat: PixelFormat, planes imagePlanes: [V4L2Layout.ImagePlane],
                        filled: [(start: Int, used: Int)]) -> PixelBuffer {
        let planes = imagePlanes.map { p in
            let offset = filled[p.memoryPlane].start + p.offset
            return PixelBuffer.Plane(base: UnsafeRawPointer(buffers.mapping(of: index, plane: p.memoryPlane).address + offset),
                                     bytesPerRow: p.bytesPerRow, rows: p.rows, samplesPerRow: p.samplesPerRow,
                                     shared: buffers.export(of: index, plane: p.memoryPlane).map { .init(memory: $0, offset: offset) })
        }
        let width = layout.width, height = layout.height
        if buffers.queuedCount >= V4L2Stream.minimumQueued {
            let lease = V4L2BufferLease(set: buffers, index: index)
            return PixelBuffer(format: pixelFormat, width: width, height: height, planes: planes, colorimetry: layout.colorimetry, owner: lease)
        }
        // Plugins hold nearly every buffer: copy this frame and give its buffer straight back.
        buffers.countStarvationCopy()
        let wrapped = PixelBuffer(format: pixelFormat, width: width, height: height, planes: planes, colorimetry: layout.colorimetry,
                                  owner: buffers)
        let copy = PixelBuffer.allocate(format: pixelFormat, width: width, height: height, colorimetry: layout.colorimetry) { dst, strides in
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
