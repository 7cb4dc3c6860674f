import CPluginGuard
import CVHostCore
import CVHostPluginABI
import Glibc
import Synchronization

/// One created instance of a plugin, with the host services it was given.
///
/// Not thread-safe by design: the ABI promises that one instance is called from one thread at
/// a time, and the runner keeps that promise by giving each instance to one worker. Only the
/// call in progress (`currentCall`) is read from other threads, to name a plugin that hangs.
final class PluginInstance: @unchecked Sendable {
    // @unchecked Sendable: used by one worker thread at a time (see above); `call` is behind a Mutex.

    private let call = Mutex<PluginCall?>(nil)
    /// The call in progress, if any.
    var currentCall: PluginCall? { call.withLock { $0 } }
    let library: PluginLibrary
    let services: HostServices
    private var handle: UnsafeMutableRawPointer?
    /// The plugin's name as a C string, for the crash report while a callback runs (CPluginGuard).
    private let guardName: UnsafeMutablePointer<CChar>

    /// Calls the plugin's create().
    /// - Parameter options: every declared option, already checked, in declaration order.
    /// - Throws: `.createFailed` with the plugin's own message.
    init(library: PluginLibrary, options: [(String, String)], services: HostServices) throws {
        let plugin = library.info
        self.library = library
        self.services = services
        guardName = strdup(plugin.name)
        let create = library.descriptor.create!
        cvhost_guard_enter(guardName, Int32(services.pluginIndex), CVHOST_GUARD_CREATE, 0)
        let (made, message) = timed("create", nil) {
            withOptionValues(options) { values, count in
                callCreate { out, error, size in create(services.host, values, count, &out, error, size) }
            }
        }
        cvhost_guard_leave()
        guard made.status == 0 else { throw createError(plugin: plugin.name, status: made.status, message: message) }
        handle = made.handle
    }

    /// Calls process(); returns its result (0 or a negative errno) and the result lines it emitted.
    func process(_ frame: inout cvhost_frame, stamp: HostServices.FrameStamp) -> (Int32, [EmittedResult]) {
        cvhost_guard_enter(guardName, Int32(services.pluginIndex), CVHOST_GUARD_PROCESS, frame.sequence)
        defer { cvhost_guard_leave() }
        let sequence = frame.sequence
        return timed("process", sequence) { services.during(frame: stamp) { library.descriptor.process!(handle, &frame) } }
    }

    /// Calls ordered() for the frame this instance just processed (the ordered stage, ABI 2.1);
    /// the runner makes the calls one at a time in frame order.
    func ordered(shared: UnsafeMutableRawPointer?, _ frame: inout cvhost_frame, stamp: HostServices.FrameStamp) -> (Int32, [EmittedResult]) {
        guard let ordered = library.descriptor.ordered else { return (0, []) }
        cvhost_guard_enter(guardName, Int32(services.pluginIndex), CVHOST_GUARD_PROCESS, frame.sequence)
        defer { cvhost_guard_leave() }
        let sequence = frame.sequence
        return timed("ordered", sequence) { services.during(frame: stamp) { ordered(shared, handle, &frame) } }
    }

    /// Runs a call into the plugin as `currentCall`.
    private func timed<R>(_ callback: String, _ sequence: UInt64?, _ body: () -> R) -> R {
        call.withLock { $0 = PluginCall(callback: callback, sequence: sequence, sinceNs: HostClock.monotonicNs()) }
        defer { call.withLock { $0 = nil } }
        return body()
    }

    /// Calls flush() if the plugin has one; its results belong to the last frame processed.
    func flush() -> (Int32, [EmittedResult]) {
        guard let flush = library.descriptor.flush else { return (0, []) }
        cvhost_guard_enter(guardName, Int32(services.pluginIndex), CVHOST_GUARD_FLUSH, 0)
        defer { cvhost_guard_leave() }
        return timed("flush", nil) { services.during(frame: nil) { flush(handle) } }
    }

    /// Calls destroy(). The instance must not be used afterwards.
    func destroy() {
        cvhost_guard_enter(guardName, Int32(services.pluginIndex), CVHOST_GUARD_DESTROY, 0)
        timed("destroy", nil) { library.descriptor.destroy!(handle) }
        cvhost_guard_leave()
        handle = nil
    }

    deinit { free(guardName) }
}

func errnoName(_ rc: Int32) -> String {
    guard rc < 0, let s = strerror(-rc) else { return "\(rc)" }
    return "\(rc) (\(String(cString: s)))"
}
