import CVHostPluginABI
import Foundation
import Synchronization

/// Finds plugins by name and loads them.
///
/// A name (`barcode`) is looked up as `libcvhost-<name>.so` in, in this order:
///   1. each folder of `CVHOST_PLUGIN_PATH` (colon-separated),
///   2. the folder of the cvhost executable (where `swift build` puts plugins),
///   3. `<prefix>/lib/cvhost/plugins`, where prefix is the executable's folder's parent
///      (an installed cvhost: /usr/local/bin/cvhost finds /usr/local/lib/cvhost/plugins).
/// A path (`./libfoo.so`, anything with a '/' or ending in .so) is loaded as it is.
public final class PluginLoader: Sendable {
    public let searchPath: [String]
    /// Loaded shared objects by real path: each is opened once and never closed.
    private let loaded = Mutex<[String: LoadedPlugin]>([:])

    public init(searchPath: [String]? = nil) {
        self.searchPath = searchPath ?? PluginLoader.defaultSearchPath()
    }

    public static func defaultSearchPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        var folders: [String] = []
        if let env = environment["CVHOST_PLUGIN_PATH"] {
            folders += env.split(separator: ":").map(String.init).filter { !$0.isEmpty }
        }
        let exe = executableFolder()
        folders.append(exe)
        folders.append(((exe as NSString).deletingLastPathComponent as NSString).appendingPathComponent("lib/cvhost/plugins"))
        return folders
    }

    static func executableFolder() -> String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (exe as NSString).deletingLastPathComponent
    }

    /// The file name a plugin called `name` has.
    public static func fileName(for name: String) -> String { "libcvhost-\(name).so" }

    /// Finds and loads a plugin by name or path.
    /// - Throws: `PluginLoadError` with the refusal's kind and a one-line message.
    public func load(_ nameOrPath: String, isPath: Bool) throws -> LoadedPlugin {
        if isPath {
            guard FileManager.default.fileExists(atPath: nameOrPath) else {
                throw PluginLoadError(.notFound, "plugin file \(nameOrPath) does not exist")
            }
            return try open(path: nameOrPath, expectedName: nil)
        }
        guard LoadedPlugin.isValidName(nameOrPath) else {
            throw PluginLoadError(.invalidName,
                                  "'\(nameOrPath)' is not a plugin name: names are [a-z][a-z0-9_-], at most 32 characters (give a path with a '/' to load a file)")
        }
        let file = PluginLoader.fileName(for: nameOrPath)
        for folder in searchPath {
            let candidate = (folder as NSString).appendingPathComponent(file)
            if FileManager.default.fileExists(atPath: candidate) {
                return try open(path: candidate, expectedName: nameOrPath)
            }
        }
        let available = discover().map(\.name)
        throw PluginLoadError(.notFound,
                              "plugin '\(nameOrPath)' not found (looked for \(file) in \(searchPath.joined(separator: ", "))); "
                                  + (available.isEmpty ? "set CVHOST_PLUGIN_PATH" : "available: \(available.joined(separator: ", "))"))
    }

    /// Every loadable plugin in the search path, first match of each name; files that fail to
    /// load are passed to `onFailure` and skipped.
    public func discover(onFailure: (String, PluginLoadError) -> Void = { _, _ in }) -> [LoadedPlugin] {
        var seen = Set<String>()
        var found: [LoadedPlugin] = []
        for folder in searchPath {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
            for file in names where file.hasPrefix("libcvhost-") && file.hasSuffix(".so") {
                let name = String(file.dropFirst("libcvhost-".count).dropLast(".so".count))
                guard !seen.contains(name) else { continue }
                let path = (folder as NSString).appendingPathComponent(file)
                do {
                    found.append(try open(path: path, expectedName: name))
                    seen.insert(name)
                } catch let error as PluginLoadError {
                    onFailure(path, error)
                } catch {}
            }
        }
        return found
    }

    private func open(path: String, expectedName: String?) throws -> LoadedPlugin {
        let real = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)).map {
            $0.hasPrefix("/") ? $0 : ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent($0)
        } ?? path
        if let done = loaded.withLock({ $0[real] }) { return done }

        // RTLD_LOCAL: two plugins may define the same symbols without seeing each other's.
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown error"
            throw PluginLoadError(.notSharedObject, "cannot load plugin \(path): \(reason)")
        }
        guard let symbol = dlsym(handle, CVHOST_PLUGIN_ENTRY_SYMBOL) else {
            throw PluginLoadError(.noEntrySymbol,
                                  "\(path) is not a cvhost plugin: it exports no \(CVHOST_PLUGIN_ENTRY_SYMBOL) (mark it CVHOST_PLUGIN_EXPORT)")
        }
        let entry = unsafeBitCast(symbol, to: cvhost_plugin_entry_fn.self)
        guard let descriptor = entry() else {
            throw PluginLoadError(.invalidDescriptor, "plugin \(path) returned no descriptor from \(CVHOST_PLUGIN_ENTRY_SYMBOL)")
        }
        let plugin = try LoadedPlugin(descriptor: descriptor, path: path)
        if let expectedName, plugin.name != expectedName {
            throw PluginLoadError(.invalidName,
                                  "\(path) calls itself '\(plugin.name)', but its file name says '\(expectedName)': rename one to match")
        }
        loaded.withLock { $0[real] = plugin }
        return plugin
    }
}
