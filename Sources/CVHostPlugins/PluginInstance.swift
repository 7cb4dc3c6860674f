import CPluginGuard
import CVHostCore
import CVHostPluginABI
import Glibc

/// One created instance of a plugin, with the host services it was given.
///
/// Not thread-safe by design: the ABI promises that one instance is called from one thread at
/// a time, and the runner keeps that promise by giving each instance to one worker. Only the
/// call in progress (`calls.currentCall`) is read from other threads, to name a plugin that hangs.
final class PluginInstance: @unchecked Sendable {
    // @unchecked Sendable: used by one worker thread at a time (see above).

    let calls: PluginCallGuard
    let library: PluginLibrary
    let services: HostServices
    private var handle: UnsafeMutableRawPointer?

    /// Calls the plugin's create().
    /// - Parameter options: every declared option, already checked, in declaration order.
    /// - Throws: `.createFailed` with the plugin's own message.
    init(library: PluginLibrary, options: [(String, String)], services: HostServices) throws {
        let plugin = library.info
        self.library = library
        self.services = services
        calls = PluginCallGuard(plugin: plugin.name, index: services.pluginIndex)
        let create = library.descriptor.create!
        let (made, message) = calls.run(CVHOST_GUARD_CREATE, "create") {
            services.creating {
                withOptionValues(options) { values, count in
                    callCreate { out, error, size in create(services.host, values, count, &out, error, size) }
                }
            }
        }
        guard made.status == 0 else { throw createError(plugin: plugin.name, status: made.status, message: message) }
        handle = made.handle
    }

    /// Calls process(); returns its result (0 or a negative errno) and the result lines it emitted.
    func process(_ frame: inout cvhost_frame, stamp: HostServices.FrameStamp) -> (Int32, [EmittedResult]) {
        calls.run(CVHOST_GUARD_PROCESS, "process", sequence: frame.sequence) {
            services.during(frame: stamp) { library.descriptor.process!(handle, &frame) }
        }
    }

    /// Calls ordered() for the frame this instance just processed (the ordered stage, ABI 2.1);
    /// the runner makes the calls one at a time in frame order.
    func ordered(shared: UnsafeMutableRawPointer?, _ frame: inout cvhost_frame, stamp: HostServices.FrameStamp) -> (Int32, [EmittedResult]) {
        guard let ordered = library.descriptor.ordered else { return (0, []) }
        return calls.run(CVHOST_GUARD_PROCESS, "ordered", sequence: frame.sequence) {
            services.during(frame: stamp) { ordered(shared, handle, &frame) }
        }
    }

    /// Calls flush() if the plugin has one; its results belong to the last frame processed.
    func flush() -> (Int32, [EmittedResult]) {
        guard let flush = library.descriptor.flush else { return (0, []) }
        return calls.run(CVHOST_GUARD_FLUSH, "flush") { services.during(frame: nil) { flush(handle) } }
    }

    /// Calls destroy(). The instance must not be used afterwards.
    func destroy() {
        calls.run(CVHOST_GUARD_DESTROY, "destroy") { library.descriptor.destroy!(handle) }
        handle = nil
    }
}

func errnoName(_ rc: Int32) -> String {
    guard rc < 0 else { return "\(rc)" }
    return "\(rc) (\(Errno(rawValue: -rc)))"
}
