import CVHostCore
import CVHostLines
import Dispatch
import Glibc

/// Reloading a Python plugin while the run goes on: its workers are started again on the code now
/// in its file, beside the running ones, and take their places between two frames; the old ones
/// are destroyed (close() called). A new process, not `importlib.reload`: every module the plugin
/// imports is fresh too. A reload whose code does not start (a syntax error, an exception in
/// __init__) leaves the old code running and says why.
extension PluginRunner {
    /// Whether `reload` applies: a Python plugin (its workers are processes of one lane each).
    public var canReload: Bool { plugin.runtime == .python && instances is IsolatedInstances }

    /// Starts the plugin's code as it is now in its file in new workers, which take over at each
    /// instance's next frame; writes `plugin.reloaded`.
    /// - Throws: `PluginLoadError`: the plugin is not a Python plugin, or its new code did not
    ///   start (its message: the file and line of a syntax error, create()'s exception, a file
    ///   another user can now change); the old code then goes on, and `plugin.reload_failed` says so.
    public func reload() throws(PluginLoadError) {
        guard canReload, let isolated = instances as? IsolatedInstances else {
            throw PluginLoadError(.createFailed, "plugin \(plugin.name) is not a Python plugin: only those are reloaded")
        }
        let started = HostClock.monotonicNs()
        do {
            try checkDeclarationsUnchanged()
            try isolated.reload()
        } catch {
            // Consumers learn that the code running is still the old one, not only stderr's reader.
            var e = JSONObject.envelope(event: "plugin.reload_failed", source: source, plugin: plugin.name, pluginIndex: index, seq: nil,
                                        tsNs: HostClock.wallNs())
            e.set("path", plugin.path)
            e.set("reason", error.message)
            sink.write(e)
            throw error
        }
        var e = JSONObject.envelope(event: "plugin.reloaded", source: source, plugin: plugin.name, pluginIndex: index, seq: nil,
                                    tsNs: HostClock.wallNs())
        e.set("path", plugin.path)
        e.set("start_ms", Double(HostClock.monotonicNs() - started) / 1e6, decimals: 1)
        sink.write(e)
    }
}

extension PluginRunner {
    /// What the plugin declares is applied when the run starts (its frames' pixel format, its
    /// options checked and typed, its instances): a reload whose file changed any of it would run
    /// on frames or options it did not ask for, so it is refused, saying what changed.
    func checkDeclarationsUnchanged() throws(PluginLoadError) {
        let now = try PythonPlugin.describe(path: plugin.path)
        var changed: [String] = []
        if now.name != plugin.name { changed.append("its name (\(plugin.name) -> \(now.name))") }
        if now.pixelFormats != plugin.pixelFormats {
            changed.append("pixel_formats (\(plugin.pixelFormats.map(\.name).joined(separator: ", ")) -> \(now.pixelFormats.map(\.name).joined(separator: ", ")))")
        }
        if now.options != plugin.options { changed.append("its options") }
        if now.isStateless != plugin.isStateless { changed.append("stateless") }
        guard changed.isEmpty else {
            throw PluginLoadError(.createFailed, "plugin \(plugin.path) changed \(changed.joined(separator: ", ")): those are applied when "
                                  + "the run starts; restart cvhost to apply them")
        }
    }
}

extension IsolatedInstances {
    /// Starts a replacement for every worker, then hands them over; none if one fails to start.
    func reload() throws(PluginLoadError) {
        var fresh: [WorkerProcess] = []
        do {
            for s in supervisors { fresh.append(try s.startReplacement()) }
        } catch {
            fresh.forEach { $0.kill(); $0.reap() }
            throw error as? PluginLoadError ?? PluginLoadError(.createFailed, "\(error)")
        }
        for (s, w) in zip(supervisors, fresh) { s.replace(with: w) }
    }
}

/// Watches Python plugins' files and reloads a plugin when its file changed (its modification
/// time, size or inode: an editor that saves by renaming is seen too) and has stayed unchanged
/// for one look (half a second), so that a file being written is not loaded half-way.
public final class PluginFileWatch: @unchecked Sendable {
    // @unchecked Sendable: `runners` and `seen` are touched only on `queue`.
    private var runners: [PluginRunner]
    private let queue = DispatchQueue(label: "cvhost.plugin-file-watch")
    private let timer: DispatchSourceTimer
    private var seen: [String: (stamp: FileStamp?, pending: FileStamp?)] = [:]

    struct FileStamp: Equatable {
        let mtimeNs: Int64, size: Int64, inode: UInt64
        init?(_ path: String) {
            var st = stat()
            guard stat(path, &st) == 0 else { return nil }
            mtimeNs = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
            size = Int64(st.st_size)
            inode = UInt64(st.st_ino)
        }
    }

    /// nil when none of `runners` can be reloaded.
    public init?(runners: [PluginRunner], intervalMs: Int = 500) {
        self.runners = runners.filter(\.canReload)
        guard !self.runners.isEmpty else { return nil }
        for r in self.runners { seen[r.plugin.path] = (FileStamp(r.plugin.path), nil) }
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .milliseconds(intervalMs), repeating: .milliseconds(intervalMs))
        timer.setEventHandler { [weak self] in self?.look() }
        timer.resume()
    }

    public func cancel() { timer.cancel() }

    /// Runners of an input added while the run goes on: their files are watched too.
    public func watch(_ more: [PluginRunner]) {
        queue.sync {
            for r in more where r.canReload {
                runners.append(r)
                if seen[r.plugin.path] == nil { seen[r.plugin.path] = (FileStamp(r.plugin.path), nil) }
            }
        }
    }

    /// Runners about to be destroyed (an input removed): never reloaded from now on.
    public func forget(_ gone: [PluginRunner]) {
        queue.sync { runners.removeAll { r in gone.contains { $0 === r } } }
    }

    private func look() {
        for (path, entry) in seen {
            let now = FileStamp(path)
            guard now != entry.stamp, now != nil else { seen[path]?.pending = nil; continue }
            // Changed: reload once it has held still for one look.
            guard now == entry.pending else { seen[path]?.pending = now; continue }
            seen[path] = (now, nil)
            for r in runners where r.plugin.path == path {
                Log.info("\(path) changed: reloading plugin \(r.plugin.name)", source: r.source)
                do {
                    try r.reload()
                } catch {
                    Log.error("\(error.message); the plugin's code as it was goes on", source: r.source)
                }
            }
        }
    }
}
