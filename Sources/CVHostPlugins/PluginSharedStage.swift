import CPluginGuard
import CVHostPluginABI
import Glibc

/// The state a plugin's instances share (the ordered stage, ABI 2.1), made by its shared_create
/// before the instances and freed by shared_destroy after them, in the process the instances
/// run in.
final class PluginSharedStage: @unchecked Sendable {
    // @unchecked Sendable: the handle is used by one thread at a time (create, then the ordered
    // calls one at a time, then flush and destroy).

    let services: HostServices
    private let library: PluginLibrary
    private(set) var handle: UnsafeMutableRawPointer?
    let calls: PluginCallGuard

    /// Calls shared_create.
    /// - Throws: `.createFailed` or `.badOptionValue` with the plugin's own message.
    init(library: PluginLibrary, options: [(String, String)], services: HostServices) throws {
        self.library = library
        self.services = services
        calls = PluginCallGuard(plugin: library.info.name, index: services.pluginIndex)
        let create = library.descriptor.shared_create!
        let (rc, message) = calls.run(CVHOST_GUARD_CREATE, "shared_create") {
            withOptionValues(options) { values, count in
                callCreate { out, error, size in create(services.host, values, count, &out, error, size) }
            }
        }
        guard rc.status == 0 else { throw createError(plugin: library.info.name, status: rc.status, message: message) }
        handle = rc.handle
    }

    /// Calls shared_flush, if the plugin has one; its results belong to the last frame processed.
    func flush() -> (Int32, [EmittedResult]) {
        guard let flush = library.descriptor.shared_flush else { return (0, []) }
        return calls.run(CVHOST_GUARD_FLUSH, "shared_flush") { services.during(frame: nil) { flush(handle) } }
    }

    /// Calls shared_destroy. After every instance's destroy.
    func destroy() {
        guard handle != nil else { return }
        calls.run(CVHOST_GUARD_DESTROY, "shared_destroy") { library.descriptor.shared_destroy?(handle) }
        handle = nil
    }
}

/// Runs `body` with the options as a C array of cvhost_option_value (valid during the call).
func withOptionValues<R>(_ options: [(String, String)], _ body: (UnsafePointer<cvhost_option_value>?, UInt32) -> R) -> R {
    let cStrings = options.flatMap { [strdup($0.0), strdup($0.1)] }
    defer { cStrings.forEach { free($0) } }
    let values = (0..<options.count).map { i in
        cvhost_option_value(name: UnsafePointer(cStrings[2 * i]), value: UnsafePointer(cStrings[2 * i + 1]))
    }
    return values.withUnsafeBufferPointer { body($0.baseAddress, UInt32(options.count)) }
}

/// Calls a create-like callback with an out-pointer and an error buffer; returns what it made
/// and the message it wrote.
func callCreate(_ body: (inout UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>, Int) -> Int32)
    -> ((status: Int32, handle: UnsafeMutableRawPointer?), String)
{
    var error = [CChar](repeating: 0, count: 512)
    var handle: UnsafeMutableRawPointer?
    let status = error.withUnsafeMutableBufferPointer { body(&handle, $0.baseAddress!, $0.count) }
    let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return ((status, handle), message)
}

/// The refusal for a create()/shared_create() that failed: the plugin says an option's value is
/// wrong (the user's to fix, like a value the host refuses: exit 18), or it failed (exit 16).
func createError(plugin: String, status: Int32, message: String) -> PluginLoadError {
    if status == CVHOST_ERROR_OPTION_VALUE {
        return PluginLoadError(.badOptionValue, "plugin \(plugin): \(message.isEmpty ? "an option's value is not valid" : message)")
    }
    return PluginLoadError(.createFailed,
                           "plugin \(plugin) failed to start: \(message.isEmpty ? "create() returned \(errnoName(status))" : message)")
}
