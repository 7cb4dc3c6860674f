import CVHostCore
import CVHostPluginABI

/// The messages between cvhost and a plugin's worker process, one per SOCK_SEQPACKET packet
/// (WorkerChannel splits long ones). Binary, little-endian. Two ends speak it: cvhost's own worker
/// (this executable re-run, built from this file) and the Python runtime's (python/cvhost/
/// _protocol.py, written apart). So it is versioned: `hello` carries `protocolVersion`, which the
/// worker checks (it answers another with `failed`), and `ready` carries the worker's, which
/// cvhost checks; a kind one end does not know is answered with `failed` at once, not left to
/// time out. Change both ends and the version together.
package enum WorkerMessage {
    /// 6: a frame's full frame is followed by its motion regions (a count, then x, y, width, height each;
    /// ABI 2.4), and ready's request flags may ask for them. 5: processBatch, several frames in one message (a count, then each as process's frame),
    /// answered by each frame's results and `done` in turn. 4: a Python worker is started with `--preload FILE` and imports it before the hello; ready's
    /// request has the flags too, and a frame may carry the full frame after it. 3: hello says which instances the worker serves of how many the plugin
    /// has; ready carries the frames the plugin asked for. 2: hello and ready carry the version. (1 had none.)
    package static let protocolVersion: UInt32 = 6

    /// The most frames in one processBatch (the host option `batch`'s range).
    package static let maxBatch = 64

    // cvhost -> worker
    /// Load the plugin, make its shared stage and instances (the first message, on socket 0).
    case hello(Hello)
    /// Shared memory that frames lie in (its descriptor attached: a memfd or a camera's dmabuf),
    /// sent once per worker and instance; the worker maps it read-only until told to forget it.
    case memory(id: UInt64, size: UInt64)
    /// Memory cvhost has released: the worker unmaps it.
    case forget(ids: [UInt64])
    case process(FrameMessage)
    /// Several frames at once (1...maxBatch): the frames of several inputs gathered for instances
    /// they share (SharedInstances), for a plugin that takes them together (a Python plugin's
    /// process_batch); each is answered in turn, as a process call.
    case processBatch([FrameMessage])
    case ordered(FrameMessage)
    case flush
    case sharedFlush
    /// Destroy the instances and the shared stage, then exit (socket 0).
    case destroy

    // worker -> cvhost
    /// The plugin is created; the worker speaks protocol `version`; its instances asked for these
    /// frames (request_frames: width, height, resize, pad, pixel format, flags, as cvhost_frame_request's), or none.
    case ready(version: UInt32, request: [UInt32]?)
    /// hello failed: a PluginLoadError.Kind raw value and the message.
    case failed(kind: String, message: String)
    /// One emitted result, as the plugin gave it (checked again by cvhost).
    case result(type: [UInt8], json: [UInt8])
    /// The call returned this status; its results came before.
    case done(status: Int32)

    package struct Hello {
        /// The protocol cvhost speaks (its `protocolVersion`).
        var version: UInt32 = WorkerMessage.protocolVersion
        var path: String
        var pluginIndex: Int
        /// How many instances this worker serves (a socket each): all of a C plugin's, one of a Python plugin's.
        var instances: Int
        /// The index of the first of them among all the plugin's instances, and how many it has in all
        /// (`cvhost_host.instance_index` and `instance_count`): a Python worker's instance 2 of 3 is 2 and 3.
        var firstInstance: Int = 0
        var instanceCount: Int
        var label: String
        var options: [(String, String)]
    }

    /// A frame in shared memory: the C frame's fields, each plane's `offset` into the memory
    /// `memory[plane]` in place of its pointer; and the full frame, when the plugin asked for it,
    /// the same way (its `full` pointer, as the frame's, is meaningless here: the worker sets it).
    package struct FrameMessage {
        var memory: [UInt64]
        var frame: cvhost_frame
        var full: PlacedFrame? = nil
        /// Its motion regions (ABI 2.4; the frame's `regions` pointer, as `full`, is set by the worker).
        var regions: [cvhost_region] = []
    }

    /// A frame's fields and the memory its planes lie in (the full frame of a FrameMessage).
    package struct PlacedFrame {
        var memory: [UInt64]
        var frame: cvhost_frame
    }

    /// Whether `raw` is a kind of this version (a worker answers another with `failed`).
    package static func knows(kind raw: UInt8) -> Bool { Kind(rawValue: raw) != nil }

    private enum Kind: UInt8 {
        case hello = 1, memory, forget, process, ordered, flush, sharedFlush, destroy, processBatch
        case ready = 64, failed, result, done
    }

    package func encoded() -> [UInt8] {
        var w = ByteWriter()
        switch self {
        case .hello(let h):
            w.u8(Kind.hello.rawValue)
            w.u32(h.version)
            w.string(h.path)
            w.u64(UInt64(h.pluginIndex))
            w.u64(UInt64(h.instances))
            w.u64(UInt64(h.firstInstance))
            w.u64(UInt64(h.instanceCount))
            w.string(h.label)
            w.u64(UInt64(h.options.count))
            for (k, v) in h.options {
                w.string(k)
                w.string(v)
            }
        case .memory(let id, let size):
            w.u8(Kind.memory.rawValue)
            w.u64(id)
            w.u64(size)
        case .forget(let ids):
            w.u8(Kind.forget.rawValue)
            w.u64(UInt64(ids.count))
            ids.forEach { w.u64($0) }
        case .process(let f), .ordered(let f):
            if case .process = self { w.u8(Kind.process.rawValue) } else { w.u8(Kind.ordered.rawValue) }
            w.frame(f)
        case .processBatch(let frames):
            w.u8(Kind.processBatch.rawValue)
            w.u64(UInt64(frames.count))
            frames.forEach { w.frame($0) }
        case .flush: w.u8(Kind.flush.rawValue)
        case .sharedFlush: w.u8(Kind.sharedFlush.rawValue)
        case .destroy: w.u8(Kind.destroy.rawValue)
        case .ready(let version, let request):
            w.u8(Kind.ready.rawValue)
            w.u32(version)
            w.u8(request == nil ? 0 : 1)
            request?.prefix(FrameRequest.fieldCount).forEach { w.u32($0) }
        case .failed(let kind, let message):
            w.u8(Kind.failed.rawValue)
            w.string(kind)
            w.string(message)
        case .result(let type, let json):
            w.u8(Kind.result.rawValue)
            w.data(type)
            w.data(json)
        case .done(let status):
            w.u8(Kind.done.rawValue)
            w.u32(UInt32(bitPattern: status))
        }
        return w.bytes
    }

    /// - Returns: nil for a message that is not one of these (a worker that is not ours, or broken).
    package init?(decoding bytes: [UInt8]) {
        var r = ByteReader(bytes)
        guard let raw = r.u8(), let kind = Kind(rawValue: raw) else { return nil }
        switch kind {
        case .hello:
            // Counts are the sender's word: one past Int's range is not a message (it would trap).
            // The version first: a worker of another version reads that much and says so.
            func count() -> Int? { r.u64().flatMap { Int(exactly: $0) } }
            guard let version = r.u32(), let path = r.string(), let index = count(), let instances = count(),
                  let first = count(), let total = count(), let label = r.string(), let n = r.u64(), n < 1024
            else { return nil }
            var options: [(String, String)] = []
            for _ in 0..<n {
                guard let k = r.string(), let v = r.string() else { return nil }
                options.append((k, v))
            }
            self = .hello(Hello(version: version, path: path, pluginIndex: index, instances: instances, firstInstance: first,
                                instanceCount: total, label: label, options: options))
        case .memory:
            guard let id = r.u64(), let size = r.u64() else { return nil }
            self = .memory(id: id, size: size)
        case .forget:
            guard let ids = r.u64s() else { return nil }
            self = .forget(ids: ids)
        case .process, .ordered:
            guard let message = r.frame() else { return nil }
            self = kind == .process ? .process(message) : .ordered(message)
        case .processBatch:
            guard let n = r.u64(), (1...UInt64(Self.maxBatch)).contains(n) else { return nil }
            var frames: [FrameMessage] = []
            for _ in 0..<n {
                guard let f = r.frame() else { return nil }
                frames.append(f)
            }
            self = .processBatch(frames)
        case .flush: self = .flush
        case .sharedFlush: self = .sharedFlush
        case .destroy: self = .destroy
        case .ready:
            guard let version = r.u32() else { return nil }
            // What follows is this version's: a worker of another is told apart by its version alone.
            guard version == WorkerMessage.protocolVersion else {
                self = .ready(version: version, request: nil)
                return
            }
            guard let has = r.u8() else { return nil }
            var request: [UInt32]?
            if has == 1 {
                let fields = (0..<FrameRequest.fieldCount).compactMap { _ in r.u32() }
                guard fields.count == FrameRequest.fieldCount else { return nil }
                request = fields
            }
            self = .ready(version: version, request: request)
        case .failed:
            guard let k = r.string(), let m = r.string() else { return nil }
            self = .failed(kind: k, message: m)
        case .result:
            guard let type = r.data(), let json = r.data() else { return nil }
            self = .result(type: type, json: json)
        case .done:
            guard let s = r.u32() else { return nil }
            self = .done(status: Int32(bitPattern: s))
        }
    }
}

private struct ByteWriter {
    var bytes: [UInt8] = []
    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func data(_ d: [UInt8]) {
        u64(UInt64(d.count))
        bytes += d
    }
    mutating func string(_ s: String) { data(Array(s.utf8)) }
    /// A frame message's frame, then whether its full frame follows, and that.
    mutating func frame(_ f: WorkerMessage.FrameMessage) {
        placed(f.memory, f.frame)
        u8(f.full == nil ? 0 : 1)
        if let full = f.full { placed(full.memory, full.frame) }
        u32(UInt32(f.regions.count))
        for r in f.regions { [r.x, r.y, r.width, r.height].forEach { u32($0) } }
    }
    private mutating func placed(_ memory: [UInt64], _ frame: cvhost_frame) {
        u64(UInt64(memory.count))
        memory.forEach { u64($0) }
        // The C frame as bytes: the same executable on both ends, so the same layout. The
        // planes' `data` are NULL and their `offset` is into their memory: the worker sets `data`.
        withUnsafeBytes(of: frame) { bytes.append(contentsOf: $0) }
    }
}

private struct ByteReader {
    let bytes: [UInt8]
    var at = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    mutating func take(_ n: Int) -> ArraySlice<UInt8>? {
        guard n >= 0, at + n <= bytes.count else { return nil }
        defer { at += n }
        return bytes[at..<at + n]
    }
    mutating func u8() -> UInt8? { take(1)?.first }
    mutating func u32() -> UInt32? { take(4).map { $0.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) } } }
    mutating func u64() -> UInt64? { take(8).map { $0.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) } } }
    /// A count, then that many u64s.
    mutating func u64s() -> [UInt64]? {
        guard let n = u64(), n <= UInt64(bytes.count - at) / 8 else { return nil }
        var values: [UInt64] = []
        for _ in 0..<n {
            guard let v = u64() else { return nil }
            values.append(v)
        }
        return values
    }
    mutating func data() -> [UInt8]? {
        guard let n = u64(), n <= UInt64(bytes.count) else { return nil }
        return take(Int(n)).map(Array.init)
    }
    mutating func string() -> String? { data().map { String(decoding: $0, as: UTF8.self) } }
    /// What ByteWriter.frame wrote.
    mutating func frame() -> WorkerMessage.FrameMessage? {
        guard let first = placed(), let hasFull = u8(), hasFull <= 1 else { return nil }
        var message = WorkerMessage.FrameMessage(memory: first.memory, frame: first.frame)
        if hasFull == 1 {
            guard let full = placed() else { return nil }
            message.full = full
        }
        guard let count = u32(), count <= UInt32(FrameMotion.mostSquares) else { return nil }
        for _ in 0..<count {
            guard let x = u32(), let y = u32(), let w = u32(), let h = u32() else { return nil }
            message.regions.append(cvhost_region(x: x, y: y, width: w, height: h))
        }
        return message
    }
    private mutating func placed() -> WorkerMessage.PlacedFrame? {
        guard let memory = u64s(), memory.count <= 4, let raw = take(MemoryLayout<cvhost_frame>.size) else { return nil }
        return WorkerMessage.PlacedFrame(memory: memory, frame: raw.withUnsafeBytes { $0.loadUnaligned(as: cvhost_frame.self) })
    }
}
