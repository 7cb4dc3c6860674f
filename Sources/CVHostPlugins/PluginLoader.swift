import CVHostCore
import Foundation
import Glibc

/// Finds plugins by name and reads what they say of themselves (PluginInfo), without loading them.
///
/// A name (`barcode`) is looked up as `libcvhost-<name>.so`, or as a Python plugin in a folder of
/// its own, `<name>/<name>.py` (the `detect` plugin, with its modules beside it), in, in this order:
///   1. each folder of `CVHOST_PLUGIN_PATH` (colon-separated),
///   2. the folder of the cvhost executable (where `swift build` puts plugins), and the build's
///      bundled Python plugins beside it (the PythonPlugins target's resources),
///   3. `<prefix>/lib/cvhost/plugins`, where prefix is the executable's folder's parent
///      (an installed cvhost: /usr/local/bin/cvhost finds /usr/local/lib/cvhost/plugins).
/// A path (`./libfoo.so`, anything with a '/' or ending in .so or .py) is loaded as it is; a
/// `.py` file is a Python plugin (PythonPlugin).
public final class PluginLoader: Sendable {
    public let searchPath: [String]
    /// Whether the run was asked to stop: a Python plugin whose import is under way is then ended
    /// at once (an import may take a minute, or never end).
    let stopRequested: @Sendable () -> Bool
    /// Whether a Python plugin found by `find` has its first worker started while it is described,
    /// for a run that will create it (WarmWorkers; the run ends those it did not take).
    let warmsWorkers: Bool

    public init(searchPath: [String]? = nil, warmsWorkers: Bool = false, stopRequested: @escaping @Sendable () -> Bool = { false }) {
        self.searchPath = searchPath ?? PluginLoader.defaultSearchPath()
        self.warmsWorkers = warmsWorkers
        self.stopRequested = stopRequested
    }

    public static func defaultSearchPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        var folders: [String] = []
        if let env = environment["CVHOST_PLUGIN_PATH"] {
            folders += env.split(separator: ":").map(String.init).filter { !$0.isEmpty }
        }
        let exe = executableFolder()
        folders.append(exe)
        folders.append(exe + "/cvhost_PythonPlugins.resources")
        folders.append(((exe as NSString).deletingLastPathComponent as NSString).appendingPathComponent("lib/cvhost/plugins"))
        return folders
    }

    static func executableFolder() -> String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (exe as NSString).deletingLastPathComponent
    }

    /// The file name a plugin called `name` has.
    public static func fileName(for name: String) -> String { "libcvhost-\(name).so" }

    /// Finds a plugin by name or path and reads its info: runs none of its code.
    /// - Throws: `PluginLoadError` with the refusal's kind and a one-line message.
    public func find(_ nameOrPath: String, isPath: Bool) throws -> PluginInfo {
        if isPath {
            // dlopen looks a name without a '/' up in the library path, never in the current folder.
            guard nameOrPath.contains("/") else {
                let name = nameOrPath.hasPrefix("libcvhost-") ? String(nameOrPath.dropFirst("libcvhost-".count).dropLast(".so".count)) : nil
                throw PluginLoadError(.notFound, "plugin file \(nameOrPath): write ./\(nameOrPath) to load the file in this folder"
                                      + (name.map { " (or --plugin \($0) to look it up by name)" } ?? ""))
            }
            var st = stat()
            guard PathText.withFileSystemPath(nameOrPath, { stat($0, &st) }) == 0 else {
                // Not only "does not exist": a symbolic link loop, a folder that may not be searched.
                let e = Errno.current
                if e.rawValue == ENOENT { throw PluginLoadError(.notFound, "plugin file \(nameOrPath) does not exist") }
                throw PluginLoadError(.notFound, "plugin file \(nameOrPath) cannot be reached", cause: e)
            }
            if PythonPlugin.isPythonFile(nameOrPath) {
                try PluginFileTrust.check(nameOrPath)
                return try PythonPlugin.describe(path: nameOrPath, warm: warmsWorkers, stopRequested: stopRequested)
            }
            return try open(path: nameOrPath, expectedName: nil)
        }
        guard PluginInfo.isValidName(nameOrPath) else {
            throw PluginLoadError(.invalidName,
                                  "'\(nameOrPath)' is not a plugin name: names are [a-z][a-z0-9_-], at most 32 characters (give a path with a '/' to load a file)")
        }
        let file = PluginLoader.fileName(for: nameOrPath)
        for folder in searchPath {
            let candidate = (folder as NSString).appendingPathComponent(file)
            if FileManager.default.fileExists(atPath: candidate) {
                return try open(path: candidate, expectedName: nameOrPath)
            }
            let python = Self.pythonFile(in: folder, name: nameOrPath)
            if FileManager.default.fileExists(atPath: python) {
                return try openPython(path: python, expectedName: nameOrPath, warm: warmsWorkers)
            }
        }
        let available = discover().map(\.name)
        throw PluginLoadError(.notFound,
                              "plugin '\(nameOrPath)' not found (looked for \(file) and \(nameOrPath)/\(nameOrPath).py in \(searchPath.joined(separator: ", "))); "
                                  + (available.isEmpty ? "set CVHOST_PLUGIN_PATH" : "available: \(available.joined(separator: ", "))"))
    }

    /// Every usable plugin in the search path, first match of each name; files whose info does not
    /// pass are passed to `onFailure` and skipped. Runs no plugin code.
    public func discover(onFailure: (String, PluginLoadError) -> Void = { _, _ in }) -> [PluginInfo] {
        var seen = Set<String>()
        var found: [PluginInfo] = []
        for folder in searchPath {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
            for file in names {
                let name: String, path: String
                if file.hasPrefix("libcvhost-") && file.hasSuffix(".so") {
                    name = String(file.dropFirst("libcvhost-".count).dropLast(".so".count))
                    path = (folder as NSString).appendingPathComponent(file)
                } else if PluginInfo.isValidName(file), FileManager.default.fileExists(atPath: Self.pythonFile(in: folder, name: file)) {
                    (name, path) = (file, Self.pythonFile(in: folder, name: file))
                } else {
                    continue
                }
                guard !seen.contains(name) else { continue }
                do {
                    found.append(try path.hasSuffix(".py") ? openPython(path: path, expectedName: name) : open(path: path, expectedName: name))
                    seen.insert(name)
                } catch let error as PluginLoadError {
                    onFailure(path, error)
                } catch {}
            }
        }
        return found
    }

    /// Where a Python plugin called `name` is in a folder of the search path.
    static func pythonFile(in folder: String, name: String) -> String {
        (folder as NSString).appendingPathComponent("\(name)/\(name).py")
    }

    /// Reads a Python plugin's info (its import, in a process of its own), once it is known that
    /// no other user can change the file.
    private func openPython(path: String, expectedName: String, warm: Bool = false) throws -> PluginInfo {
        try PluginFileTrust.check(path)
        let plugin = try PythonPlugin.describe(path: path, warm: warm, stopRequested: stopRequested)
        if plugin.name != expectedName {
            throw PluginLoadError(.invalidName, "\(path) calls itself '\(plugin.name)', but its folder's name says '\(expectedName)': rename one to match")
        }
        return plugin
    }

    /// Reads a shared object's info, once it is known that no other user can change the file.
    private func open(path: String, expectedName: String?) throws -> PluginInfo {
        try PluginFileTrust.check(path)
        let plugin = try PluginInfo(path: path)
        if let expectedName, plugin.name != expectedName {
            throw PluginLoadError(.invalidName,
                                  "\(path) calls itself '\(plugin.name)', but its file name says '\(expectedName)': rename one to match")
        }
        return plugin
    }
}
