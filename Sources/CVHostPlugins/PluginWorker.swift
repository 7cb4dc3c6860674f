import CVHostCore
import CVHostPluginABI
import CWorkerIPC
import Foundation

/// The worker process of one `--plugin` (isolation=process): the cvhost executable run again with
/// `--cvhost-plugin-worker`. It loads the plugin, makes its shared stage and instances, and serves
/// one instance per socket (descriptors 3, 4, ...), each on its own thread, as cvhost's own process
/// would call them: frames come in shared memory it maps read-only, results go back unformatted, for
/// cvhost to check and write. It holds nothing else of cvhost's: no stdout (its descriptor 1 is
/// cvhost's stderr), no other descriptor, no new privileges.
public enum PluginWorker {
    /// The argument that makes a cvhost executable a worker: `exe --cvhost-plugin-worker CHANNELS PARENT_PID`.
    static let flag = "--cvhost-plugin-worker"

    /// Runs the worker and returns its exit status when the process was started as one; nil otherwise.
    /// Call first thing in main().
    public static func runIfRequested(_ arguments: [String] = CommandLine.arguments) -> Int32? {
        guard arguments.count == 4, arguments[1] == flag, let channels = Int(arguments[2]), channels >= 1,
              let parent = Int32(arguments[3])
        else { return nil }
        return run(channels: channels, parent: parent)
    }

    /// Exit statuses of a worker that could not start serving (cvhost reports them).
    static let restrictFailed: Int32 = 70
    static let noHello: Int32 = 71

    private static func run(channels count: Int, parent: pid_t) -> Int32 {
        guard cvhost_worker_restrict(parent) == 0 else { return restrictFailed }
        let channels = (0..<count).map { WorkerChannel(fd: Int32(3 + $0)) }
        guard case .message(.hello(let hello), _) = channels[0].receive(), hello.instances == count else { return noHello }
        guard hello.version == WorkerMessage.protocolVersion else {
            channels[0].send(.failed(kind: PluginLoadError.Kind.abiMismatch.rawValue,
                                     message: "cvhost speaks worker protocol \(hello.version) and its worker speaks \(WorkerMessage.protocolVersion)"))
            return 0
        }
        let shared: PluginSharedStage?
        let instances: [PluginInstance]
        let request: FrameRequest?
        do {
            let library = try PluginLibrary(PluginInfo(path: hello.path), pluginIndex: hello.pluginIndex)
            (shared, instances, request) = try InProcessInstances.create(library: library, options: hello.options, count: count,
                                                                         index: hello.pluginIndex, label: hello.label)
        } catch let e as PluginLoadError {
            channels[0].send(.failed(kind: e.kind.rawValue, message: e.message))
            return 0
        } catch {
            channels[0].send(.failed(kind: PluginLoadError.Kind.createFailed.rawValue, message: "\(error)"))
            return 0
        }
        channels[0].send(.ready(version: WorkerMessage.protocolVersion, request: request?.fields))
        for i in 1..<count {
            SystemThread.start("\(hello.label) instance \(i)") { serve(channels[i], instances[i], shared: shared) }
        }
        serve(channels[0], instances[0], shared: shared, onDestroy: {
            instances.forEach { $0.destroy() }
            shared?.destroy()
        })
        return 0
    }

    /// Serves one instance until cvhost says destroy (socket 0) or goes away. When socket 0's
    /// returns, `run` returns the worker's status and the executable ends the process.
    private static func serve(_ channel: WorkerChannel, _ instance: PluginInstance, shared: PluginSharedStage?,
                              onDestroy: (() -> Void)? = nil) {
        /// The shared memory cvhost sent on this socket, by id: mapped read-only, with its descriptor.
        var mapped: [UInt64: (base: UnsafeRawPointer, size: Int, fd: Int32)] = [:]
        func unmap(_ id: UInt64) {
            guard let m = mapped.removeValue(forKey: id) else { return }
            munmap(UnsafeMutableRawPointer(mutating: m.base), m.size)
            close(m.fd)
        }
        func reply(_ call: (Int32, [EmittedResult])) {
            for r in call.1 { channel.send(.result(type: Array(r.type.utf8), json: r.json)) }
            channel.send(.done(status: call.0))
        }
        /// The frame with its planes' pointers into what is mapped; nil when a plane lies outside it.
        func placed(_ m: WorkerMessage.PlacedFrame) -> cvhost_frame? {
            var f = m.frame
            f.full = nil
            (f.region_count, f.regions) = (0, nil)
            let count = Int(min(f.plane_count, 4))
            guard m.memory.count >= count else { return nil }
            var inside = true
            withUnsafeMutableBytes(of: &f.planes) { raw in
                let planes = raw.bindMemory(to: cvhost_plane.self)
                for i in 0..<count {
                    guard let memory = mapped[m.memory[i]], planes[i].offset <= UInt64(memory.size),
                          planes[i].length <= UInt64(memory.size) - planes[i].offset
                    else {
                        inside = false
                        return
                    }
                    planes[i].data = (memory.base + Int(planes[i].offset)).assumingMemoryBound(to: UInt8.self)
                    planes[i].fd = memory.fd
                }
            }
            return inside ? f : nil
        }
        /// The full frame the plugin asked for besides, where `process` points it (it lives as long as the call).
        var full = cvhost_frame()
        func frame(_ m: WorkerMessage.FrameMessage) -> (cvhost_frame, HostServices.FrameStamp)? {
            guard let f = placed(.init(memory: m.memory, frame: m.frame)) else { return nil }
            if let given = m.full {
                guard let placedFull = placed(given) else { return nil }
                full = placedFull
            }
            return (f, HostServices.FrameStamp(sequence: f.sequence, captureTimeNs: f.capture_time_ns,
                                               presentationTimeNs: f.presentation_time_ns, imagePath: nil))
        }
        func process(_ m: WorkerMessage.FrameMessage) {
            guard case (var f, let stamp)? = frame(m) else { channel.send(.done(status: -EINVAL)); return }
            reply(withUnsafePointer(to: &full) { p in
                m.regions.withUnsafeBufferPointer { r in
                    f.full = m.full == nil ? nil : p
                    (f.region_count, f.regions) = (UInt32(r.count), r.isEmpty ? nil : r.baseAddress)
                    return instance.process(&f, stamp: stamp)
                }
            })
        }
        while true {
            switch channel.receive() {
            case .message(.memory(let id, let size), let fds):
                guard let fd = fds.first else { continue }
                fds.dropFirst().forEach { close($0) }
                unmap(id)
                // Unmappable memory (a size that lies): its frames are refused as outside it.
                guard size <= UInt64(Int.max), let p = mmap(nil, Int(size), PROT_READ, MAP_SHARED, fd, 0), p != MAP_FAILED else {
                    close(fd)
                    continue
                }
                // The descriptor stays open while mapped: it is the planes' `fd`, which the plugin may map itself.
                mapped[id] = (UnsafeRawPointer(p), Int(size), fd)
            case .message(.forget(let ids), _):
                ids.forEach(unmap)
            case .message(.process(let m), _):
                process(m)
            case .message(.processBatch(let frames), _):
                // A C plugin takes one frame a call: each in turn, answered as a process call.
                frames.forEach(process)
            case .message(.ordered(let m), _):
                guard case (var f, let stamp)? = frame(m) else { channel.send(.done(status: -EINVAL)); continue }
                reply(instance.ordered(shared: shared?.handle, &f, stamp: stamp))
            case .message(.flush, _):
                reply(instance.flush())
            case .message(.sharedFlush, _):
                reply(shared?.flush() ?? (0, []))
            case .message(.destroy, _):
                onDestroy?()
                channel.send(.done(status: 0))
                return
            case .unknownKind(let kind):
                channel.send(.failed(kind: "protocol_error", message: "the worker does not know message kind \(kind)"))
            case .closed, .failed:
                // cvhost is gone (or is not speaking our language): nothing more to do.
                return
            case .message, .timedOut:
                continue
            }
        }
    }
}
