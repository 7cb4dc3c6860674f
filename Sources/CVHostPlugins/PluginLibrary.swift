import CPluginGuard
import CVHostCore
import CVHostPluginABI
import Foundation

/// A plugin's shared object, loaded into this process, and its callbacks: the first point where
/// plugin code runs (its constructors). In cvhost's process for isolation=none, in the worker
/// otherwise. Load only a plugin whose PluginInfo passed. The object is never unloaded (a plugin's
/// threads or atexit handlers may still need its code until the process ends).
struct PluginLibrary: @unchecked Sendable {
    // @unchecked Sendable: `descriptor` is a copy of the plugin's constant descriptor.

    let info: PluginInfo
    /// The plugin's descriptor as this host knows it: copied up to the smaller of the two sizes,
    /// zero beyond (OBS's rule): a callback an older plugin does not have is NULL.
    let descriptor: cvhost_plugin_descriptor

    /// Loads `info.path`.
    /// - Throws: `.notSharedObject` when the dynamic loader refuses it (a missing library),
    ///   `.invalidDescriptor` when the loaded descriptor is not the one the file said.
    /// - Parameter pluginIndex: the position of its --plugin, for the crash report of a constructor.
    init(_ info: PluginInfo, pluginIndex: Int) throws {
        self.info = info
        // RTLD_LOCAL: two plugins may define the same symbols without seeing each other's. Loading
        // runs the plugin's constructors: a crash in them is the plugin's, and named as such.
        let loaded = PluginCallGuard(plugin: info.name, index: pluginIndex).run(CVHOST_GUARD_CREATE, "load") {
            PathText.withFileSystemPath(info.path) { dlopen($0, RTLD_NOW | RTLD_LOCAL) }
        }
        guard let handle = loaded else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown error"
            throw PluginLoadError(.notSharedObject, "cannot load plugin \(info.path): \(reason)")
        }
        guard let symbol = dlsym(handle, CVHOST_PLUGIN_SYMBOL) else {
            throw PluginLoadError(.noEntrySymbol, "\(info.path) exports no \(CVHOST_PLUGIN_SYMBOL) once loaded")
        }
        let exported = symbol.assumingMemoryBound(to: cvhost_plugin_descriptor.self)
        var copy = cvhost_plugin_descriptor()
        let size = min(Int(exported.pointee.struct_size), MemoryLayout<cvhost_plugin_descriptor>.size)
        withUnsafeMutableBytes(of: &copy) { $0.copyMemory(from: UnsafeRawBufferPointer(start: symbol, count: size)) }
        // The file was read before loading: the object loaded must be that one.
        guard copy.name.map({ String(cString: $0) }) == info.name, copy.create != nil, copy.process != nil, copy.destroy != nil
        else {
            throw PluginLoadError(.invalidDescriptor, "plugin \(info.path) changed between reading and loading it")
        }
        descriptor = copy
    }
}
