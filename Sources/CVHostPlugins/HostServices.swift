import CVHostCore
import CVHostPluginABI
import Glibc

/// The `cvhost_host` table given to one plugin instance, and the state behind it: which frame
/// the instance is working on, and the result lines it emitted for that frame.
///
/// emit() is accepted only while cvhost calls the instance's process() or flush(), on the thread
/// it calls it on: that call's frame is what a result belongs to. From any other thread (a
/// plugin's own inference thread, a timer) or outside those calls (create, destroy) it is
/// refused with -EPERM and counted, never a race: the call state is behind a lock.
final class HostServices: @unchecked Sendable {
    // @unchecked Sendable: the call state is behind a lock; the refusal count is atomic.
    let pluginIndex: Int
    let logSource: String
    let host: UnsafeMutablePointer<cvhost_host>

    /// What the envelope of a result needs of the frame being processed (during flush: the last
    /// one processed). Not the frame itself: holding its pixels would keep a camera's driver
    /// buffer from going back to the driver.
    struct FrameStamp: Sendable {
        let sequence: UInt64
        let captureTimeNs: Int64
        let presentationTimeNs: Int64
        /// The image file the frame came from (inputs of still images).
        let imagePath: String?

        init(_ sample: SampleBuffer) {
            self.init(sequence: sample.sequence, captureTimeNs: sample.captureTimeNs, presentationTimeNs: sample.presentationTimeNs,
                      imagePath: sample.imagePath)
        }

        init(sequence: UInt64, captureTimeNs: Int64, presentationTimeNs: Int64, imagePath: String?) {
            self.sequence = sequence
            self.captureTimeNs = captureTimeNs
            self.presentationTimeNs = presentationTimeNs
            self.imagePath = imagePath
        }
    }

    /// The call cvhost is making into the instance: on which thread, for which frame (kept
    /// after the call: flush's results belong to the last frame processed), and its results.
    private struct Call {
        var thread: pthread_t?
        var frame: FrameStamp?
        var results: [EmittedResult] = []
        /// create() is running on `thread`: the only time frames may be requested.
        var creating = false
    }
    private let call = Locked(Call())
    /// Results refused; read by the metrics writer on another thread.
    private let refused: RepeatedWarning
    var invalidResults: UInt64 { refused.total }
    /// request_frames() outside create(): said once, then counted (not results, so not in invalidResults).
    private let misplacedRequests: RepeatedWarning

    /// Where the instances' frame requests go (nil for the shared stage's host, which may not ask).
    private let requests: FrameRequests?

    /// - Parameters: instance: nil for the host given to shared_create; shared: the plugin's shared
    ///   state; requests: what the plugin's instances asked for (request_frames).
    init(pluginIndex: Int, logSource: String, instance: Int?, instanceCount: Int, shared: UnsafeMutableRawPointer? = nil,
         requests: FrameRequests? = nil) {
        self.pluginIndex = pluginIndex
        self.logSource = logSource
        self.requests = requests
        refused = RepeatedWarning(source: logSource)
        misplacedRequests = RepeatedWarning(source: logSource)
        host = .allocate(capacity: 1)
        host.initialize(to: cvhost_host(
            struct_size: UInt32(MemoryLayout<cvhost_host>.size), abi_major: UInt16(CVHOST_PLUGIN_ABI_MAJOR),
            abi_minor: UInt16(CVHOST_PLUGIN_ABI_MINOR), context: nil, emit: hostEmit, log: hostLog,
            instance_index: instance.map { UInt32($0) } ?? UInt32.max, instance_count: UInt32(instanceCount), shared: shared,
            request_frames: hostRequestFrames))
        host.pointee.context = Unmanaged.passUnretained(self).toOpaque()
        HostServices.given.withLock { $0.append(self) }
    }

    /// Every host given to a plugin, kept for the life of the process, as the plugin's code is
    /// (plugins are never unloaded): a plugin may keep the pointer and call emit() or log() from a
    /// thread of its own after destroy() (refused, -EPERM, but read), so it must never be freed.
    private static let given = Locked<[HostServices]>([])

    deinit {
        host.deinitialize(count: 1)
        host.deallocate()
    }

    /// Runs `body` (a call into the plugin) as the call emit() is accepted in; `frame` is what its
    /// results belong to (nil: the frame of the call before, or none). - Returns: `body`'s result
    /// and the results emitted meanwhile.
    func during<R>(frame: FrameStamp?, _ body: () -> R) -> (R, [EmittedResult]) {
        call.withLock { c in
            c.thread = pthread_self()
            if let frame { c.frame = frame }
        }
        let result = body()
        let results = call.withLock { c in
            c.thread = nil
            defer { c.results.removeAll(keepingCapacity: true) }
            return c.results
        }
        return (result, results)
    }

    /// Runs `body` (the instance's create()) as the call request_frames() is accepted in.
    func creating<R>(_ body: () -> R) -> R {
        call.withLock { c in
            c.thread = pthread_self()
            c.creating = true
        }
        defer { call.withLock { c in c.thread = nil; c.creating = false } }
        return body()
    }

    func requestFrames(_ request: UnsafePointer<cvhost_frame_request>?) -> Int32 {
        let inCreate = call.withLock { c in c.creating && c.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        guard inCreate, let requests, let request else {
            misplacedRequests.record { "request_frames() refused: it is accepted only within create(), on the thread cvhost called it on, "
                + "with a request (\($0) so far)" }
            return inCreate && requests != nil ? -EINVAL : -EPERM
        }
        let status = requests.take(request.pointee)
        if status == -EINVAL {
            Log.warning("request_frames() refused: a size of 16 to 8192 each side, CVHOST_RESIZE_STRETCH or LETTERBOX, a pad of 0-255, "
                        + "and one of the plugin's own pixel formats (or 0)", source: logSource)
        } else if status == -EEXIST {
            Log.warning("request_frames() refused: another instance asked for \(requests.request.map(\.description) ?? "other frames")",
                        source: logSource)
        }
        return status
    }

    /// Makes `frame` the one results emitted later with no frame of their own belong to (the
    /// shared stage's flush: the last frame that went through the ordered stage).
    func remember(frame: FrameStamp) {
        call.withLock { $0.frame = frame }
    }

    func emit(type: UnsafePointer<CChar>?, json: UnsafePointer<CChar>?) -> Int32 {
        let onCallThread = call.withLock { c in !c.creating && c.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        guard onCallThread else {
            return reject("emit() refused: it is accepted only within process() or flush(), on the thread cvhost called them on",
                          code: -EPERM)
        }
        guard let type, let json else {
            return reject("emit() was called with a NULL type or object")
        }
        func bytes(_ s: UnsafePointer<CChar>) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(start: UnsafeRawPointer(s).assumingMemoryBound(to: UInt8.self), count: strlen(s))
        }
        var checked: EmittedResult
        do {
            checked = try EmittedResult.check(type: bytes(type), json: bytes(json))
        } catch {
            return reject("\(error)")
        }
        call.withLock { c in
            checked.frame = c.frame
            c.results.append(checked)
        }
        return 0
    }

    /// Counts a refused result and logs it (RepeatedWarning).
    private func reject(_ message: String, code: Int32 = -EINVAL) -> Int32 {
        refused.record { "\(message) (\($0) so far)" }
        return code
    }
}

// C entry points of the host services. Global functions, so that they are plain C function
// pointers with no captured context and no actor isolation.
private func hostEmit(_ context: UnsafeMutableRawPointer?, _ type: UnsafePointer<CChar>?,
                      _ json: UnsafePointer<CChar>?) -> Int32 {
    guard let context else { return -EINVAL }
    return Unmanaged<HostServices>.fromOpaque(context).takeUnretainedValue().emit(type: type, json: json)
}

private func hostRequestFrames(_ context: UnsafeMutableRawPointer?, _ request: UnsafePointer<cvhost_frame_request>?) -> Int32 {
    guard let context else { return -EINVAL }
    return Unmanaged<HostServices>.fromOpaque(context).takeUnretainedValue().requestFrames(request)
}

private func hostLog(_ context: UnsafeMutableRawPointer?, _ level: Int32, _ message: UnsafePointer<CChar>?) {
    guard let context, let message else { return }
    let services = Unmanaged<HostServices>.fromOpaque(context).takeUnretainedValue()
    let lvl = Log.Level(rawValue: Int(max(0, min(3, level)))) ?? .info
    Log.write(lvl, String(decoding: UnsafeRawBufferPointer(start: message, count: strlen(message)), as: UTF8.self),
              source: services.logSource)
}
