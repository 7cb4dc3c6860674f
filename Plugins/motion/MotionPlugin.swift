// The `motion` plugin, in Swift: compares each frame's luma with the previous frame's and reports
// the share of pixels that changed, and whether that makes motion: by default a line when motion
// starts and when it stops, once the new state has lasted `hold` seconds (report=every: a line per
// frame). It keeps the previous frame, so it is not stateless: one instance, frames in order.
//
// A Swift plugin sees only the C header (module CVHostPluginABI), never the host's Swift modules:
// two copies of a Swift module in one process would not share types or globals.
import CVHostPluginABI
import Glibc

/// One instance's state. Used from one thread at a time, as the ABI promises.
final class Motion {
    let host: UnsafePointer<cvhost_host>
    let threshold: Int
    let minFraction: Double
    let step: Int
    /// Nanoseconds of media time a new state (motion or none) must last before it is reported:
    /// a flicker of a frame or two does not start or stop motion.
    let holdNs: Int64
    /// Write a line for every frame (true), or only when motion starts or stops.
    let everyFrame: Bool
    var previous: [UInt8] = []
    var previousSize = (0, 0)
    /// The state as reported.
    var moving = false
    /// Since when (media time) the frames have said the other state, if they do.
    var otherSince: Int64?

    init(host: UnsafePointer<cvhost_host>, threshold: Int, minFraction: Double, step: Int, holdNs: Int64, everyFrame: Bool) {
        self.host = host
        self.threshold = threshold
        self.minFraction = minFraction
        self.step = step
        self.holdNs = holdNs
        self.everyFrame = everyFrame
    }

    func process(_ frame: UnsafePointer<cvhost_frame>) -> Int32 {
        let f = frame.pointee
        let plane = f.planes.0  // GRAY8: the luma plane, borrowed until we return
        let w = Int(plane.width), h = Int(plane.height), stride = Int(plane.stride)
        let sampled = ((w + step - 1) / step) * ((h + step - 1) / step)
        let independent = f.flags & UInt32(CVHOST_FRAME_FLAG_INDEPENDENT) != 0
        let comparable = !independent && previousSize == (w, h) && previous.count == sampled
        if previous.count != sampled { previous = [UInt8](repeating: 0, count: sampled) }
        var changed = 0
        var i = 0
        for y in Swift.stride(from: 0, to: h, by: step) {
            let row = plane.data + y * stride
            for x in Swift.stride(from: 0, to: w, by: step) {
                let v = row[x]
                if comparable && abs(Int(v) - Int(previous[i])) > threshold { changed += 1 }
                previous[i] = v
                i += 1
            }
        }
        previousSize = (w, h)
        guard comparable else { return 0 }  // the first frame (or a new picture): nothing to compare
        let fraction = Double(changed) / Double(max(1, sampled))
        let seen = fraction >= minFraction
        // The reported state follows what the frames say once they have said it for `hold`.
        var started = false, stopped = false
        if seen == moving {
            otherSince = nil
        } else {
            let since = otherSince ?? f.presentation_time_ns
            otherSince = since
            if f.presentation_time_ns - since >= holdNs {
                moving = seen
                started = seen
                stopped = !seen
                otherSince = nil
            }
        }
        let now = moving
        guard everyFrame || started || stopped else { return 0 }
        let json = "{\"changed_fraction\":\(Double(Int(fraction * 10000)) / 10000),\"motion\":\(now),"
            + "\"started\":\(started),\"stopped\":\(stopped)}"
        return json.withCString { text in host.pointee.emit(host.pointee.context, "motion", text) }
    }
}

/// Copies a message into the host's error buffer, NUL-terminated and cut to fit.
private func copy(_ message: String, into buffer: UnsafeMutablePointer<CChar>?, size: Int) {
    guard let buffer, size > 0 else { return }
    let bytes = Array(message.utf8.prefix(size - 1))
    for (i, b) in bytes.enumerated() { buffer[i] = CChar(bitPattern: b) }
    buffer[bytes.count] = 0
}

private func option(_ options: UnsafePointer<cvhost_option_value>?, _ count: UInt32, _ name: String) -> String {
    cvhost_option(options, count, name).map { String(cString: $0) } ?? ""
}

// The callbacks, exported under C names for the descriptor (descriptor/motion_descriptor.c).

@_cdecl("motion_create")
public func motionCreate(_ host: UnsafePointer<cvhost_host>?, _ options: UnsafePointer<cvhost_option_value>?, _ count: UInt32,
                         _ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ error: UnsafeMutablePointer<CChar>?,
                         _ errorSize: Int) -> Int32 {
    guard let host, let out else { return -EINVAL }
    if host.pointee.instance_count > 1 {
        copy("motion compares each frame with the one before and needs instances=1", into: error, size: errorSize)
        return CVHOST_ERROR_OPTION_VALUE  // a refused option value: exit 18
    }
    let motion = Motion(host: host, threshold: Int(option(options, count, "threshold")) ?? 25,
                        minFraction: Double(option(options, count, "min_fraction")) ?? 0.01,
                        step: Int(option(options, count, "step")) ?? 2,
                        holdNs: Int64((Double(option(options, count, "hold")) ?? 0.3) * 1e9),
                        everyFrame: option(options, count, "report") == "every")
    out.pointee = Unmanaged.passRetained(motion).toOpaque()
    return 0
}

@_cdecl("motion_process")
public func motionProcess(_ instance: UnsafeMutableRawPointer?, _ frame: UnsafePointer<cvhost_frame>?) -> Int32 {
    guard let instance, let frame else { return -EINVAL }
    return Unmanaged<Motion>.fromOpaque(instance).takeUnretainedValue().process(frame)
}

@_cdecl("motion_destroy")
public func motionDestroy(_ instance: UnsafeMutableRawPointer?) {
    guard let instance else { return }
    Unmanaged<Motion>.fromOpaque(instance).release()
}
