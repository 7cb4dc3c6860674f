// The `motion` plugin, in Swift: compares each frame's luma with the previous frame's and reports
// the share of pixels that changed, and whether that makes motion. It keeps the previous frame, so
// it is not stateless: one instance, frames in order (the host's default).
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
    var previous: [UInt8] = []
    var previousSize = (0, 0)
    var moving = false

    init(host: UnsafePointer<cvhost_host>, threshold: Int, minFraction: Double, step: Int) {
        self.host = host
        self.threshold = threshold
        self.minFraction = minFraction
        self.step = step
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
        let now = fraction >= minFraction
        let started = now && !moving, stopped = !now && moving
        moving = now
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
    for i in 0..<Int(count) {
        let o = options![i]
        if String(cString: o.name) == name { return String(cString: o.value) }
    }
    return ""
}

private let create: @convention(c) (UnsafePointer<cvhost_host>?, UnsafePointer<cvhost_option_value>?, UInt32,
                                    UnsafeMutablePointer<UnsafeMutableRawPointer?>?, UnsafeMutablePointer<CChar>?, Int) -> Int32 = {
    host, options, count, out, error, errorSize in
    guard let host, let out else { return -EINVAL }
    if host.pointee.instance_count > 1 {
        copy("motion compares each frame with the one before and needs instances=1", into: error, size: errorSize)
        return -EINVAL
    }
    let motion = Motion(host: host, threshold: Int(option(options, count, "threshold")) ?? 25,
                        minFraction: Double(option(options, count, "min_fraction")) ?? 0.01,
                        step: Int(option(options, count, "step")) ?? 2)
    out.pointee = Unmanaged.passRetained(motion).toOpaque()
    return 0
}

private let process: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<cvhost_frame>?) -> Int32 = { instance, frame in
    guard let instance, let frame else { return -EINVAL }
    return Unmanaged<Motion>.fromOpaque(instance).takeUnretainedValue().process(frame)
}

private let destroy: @convention(c) (UnsafeMutableRawPointer?) -> Void = { instance in
    guard let instance else { return }
    Unmanaged<Motion>.fromOpaque(instance).release()
}

// The descriptor and everything it points to live for the life of the process.
nonisolated(unsafe) private let formats: UnsafeMutablePointer<UInt32> = {
    let p = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
    p.initialize(to: CVHOST_PIXEL_FORMAT_GRAY8.rawValue)
    return p
}()

private func cString(_ s: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
}

nonisolated(unsafe) private let options: UnsafeMutablePointer<cvhost_option_spec> = {
    let specs = [
        cvhost_option_spec(name: cString("threshold"), type: CVHOST_OPTION_INT.rawValue, default_value: cString("25"),
                           help: cString("luma difference (0-255) that counts a pixel as changed"), min: 1, max: 255, choices: nil),
        cvhost_option_spec(name: cString("min_fraction"), type: CVHOST_OPTION_DOUBLE.rawValue, default_value: cString("0.01"),
                           help: cString("share of changed pixels that makes motion"), min: 0.0001, max: 1, choices: nil),
        cvhost_option_spec(name: cString("step"), type: CVHOST_OPTION_INT.rawValue, default_value: cString("2"),
                           help: cString("compare every Nth pixel in each direction"), min: 1, max: 32, choices: nil),
    ]
    let p = UnsafeMutablePointer<cvhost_option_spec>.allocate(capacity: specs.count)
    p.initialize(from: specs, count: specs.count)
    return p
}()

nonisolated(unsafe) private let descriptor: UnsafeMutablePointer<cvhost_plugin_descriptor> = {
    let p = UnsafeMutablePointer<cvhost_plugin_descriptor>.allocate(capacity: 1)
    p.initialize(to: cvhost_plugin_descriptor(
        abi_version: UInt32(CVHOST_PLUGIN_ABI_VERSION), struct_size: UInt32(MemoryLayout<cvhost_plugin_descriptor>.size),
        name: cString("motion"), version: cString("1.0.0"),
        description: cString("share of pixels that changed since the last frame, and motion start/stop (a plugin in Swift)"),
        pixel_formats: UnsafePointer(formats), pixel_format_count: 1, flags: 0,
        hints: cvhost_capture_hints(struct_size: UInt32(MemoryLayout<cvhost_capture_hints>.size), focus_range: 0, min_width: 0,
                                    min_height: 0),
        options: UnsafePointer(options), option_count: 3, option_spec_size: UInt32(MemoryLayout<cvhost_option_spec>.size),
        create: create, process: process, flush: nil, destroy: destroy))
    return p
}()

@_cdecl("cvhost_plugin_entry")
public func cvhostPluginEntry() -> UnsafePointer<cvhost_plugin_descriptor> {
    UnsafePointer(descriptor)
}
