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
    let plugin: LoadedPlugin
    let services: HostServices
    private var handle: UnsafeMutableRawPointer?
    /// The plugin's name as a C string, for the crash report while a callback runs (CPluginGuard).
    private let guardName: UnsafeMutablePointer<CChar>

    /// Calls the plugin's create().
    /// - Parameter options: every declared option, already checked, in declaration order.
    /// - Throws: `.createFailed` with the plugin's own message.
    init(plugin: LoadedPlugin, options: [(String, String)], services: HostServices) throws {
        self.plugin = plugin
        self.services = services
        guardName = strdup(plugin.name)
        let cStrings = options.flatMap { [strdup($0.0), strdup($0.1)] }
        defer { cStrings.forEach { free($0) } }
        var values = (0..<options.count).map { i in
            cvhost_option_value(name: UnsafePointer(cStrings[2 * i]), value: UnsafePointer(cStrings[2 * i + 1]))
        }
        var error = [CChar](repeating: 0, count: 512)
        var instance: UnsafeMutableRawPointer?
        let create = plugin.descriptor.pointee.create!
        cvhost_guard_enter(guardName, Int32(services.pluginIndex), CVHOST_GUARD_CREATE, 0)
        let rc = values.withUnsafeMutableBufferPointer { buffer in
            create(services.host, buffer.baseAddress, UInt32(options.count), &instance, &error, error.count)
        }
        cvhost_guard_leave()
        guard rc == 0 else {
            let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // The plugin says an option's value is wrong: that is the user's to fix, like a value
            // the host refuses (exit 18), not a failure of the plugin (exit 16).
            if rc == CVHOST_ERROR_OPTION_VALUE {
                throw PluginLoadError(.badOptionValue, "plugin \(plugin.name): \(message.isEmpty ? "an option's value is not valid" : message)")
            }
            throw PluginLoadError(.createFailed,
                                  "plugin \(plugin.name) failed to start: \(message.isEmpty ? "create() returned \(errnoName(rc))" : message)")
        }
        handle = instance
    }

    /// Calls process(); returns its result (0 or a negative errno) and the result lines it emitted.
    func process(_ frame: inout cvhost_frame, stamp: HostServices.FrameStamp) -> (Int32, [[UInt8]]) {
        cvhost_guard_enter(guardName, Int32(services.pluginIndex), CVHOST_GUARD_PROCESS, frame.sequence)
        defer { cvhost_guard_leave() }
        let sequence = frame.sequence
        return timed("process", sequence) { services.during(frame: stamp) { plugin.descriptor.pointee.process!(handle, &frame) } }
    }

    /// Runs a call into the plugin as `currentCall`.
    private func timed<R>(_ callback: String, _ sequence: UInt64?, _ body: () -> R) -> R {
        call.withLock { $0 = PluginCall(callback: callback, sequence: sequence, sinceNs: HostClock.monotonicNs()) }
        defer { call.withLock { $0 = nil } }
        return body()
    }

    /// Calls flush() if the plugin has one; its results belong to the last frame processed.
    func flush() -> (Int32, [[UInt8]]) {
        guard let flush = plugin.descriptor.pointee.flush else { return (0, []) }
        cvhost_guard_enter(guardName, Int32(services.pluginIndex), CVHOST_GUARD_FLUSH, 0)
        defer { cvhost_guard_leave() }
        return timed("flush", nil) { services.during(frame: nil) { flush(handle) } }
    }

    /// Calls destroy(). The instance must not be used afterwards.
    func destroy() {
        cvhost_guard_enter(guardName, Int32(services.pluginIndex), CVHOST_GUARD_DESTROY, 0)
        timed("destroy", nil) { plugin.descriptor.pointee.destroy!(handle) }
        cvhost_guard_leave()
        handle = nil
    }

    deinit { free(guardName) }
}

/// A call into a plugin: which callback, for which frame, since when (monotonic ns).
public struct PluginCall: Sendable {
    public let callback: String
    public let sequence: UInt64?
    public let sinceNs: UInt64
}

func errnoName(_ rc: Int32) -> String {
    guard rc < 0, let s = strerror(-rc) else { return "\(rc)" }
    return "\(rc) (\(String(cString: s)))"
}
