import CVHostCore
import Foundation
import Glibc

/// A plugin is code that runs as the user who runs cvhost (root, for a service): a plugin file
/// that another user can change is that user's code run as you. So, as ssh does with its keys,
/// a plugin file is refused (exit 24) unless it is owned by root or by the user cvhost runs as
/// and writable by nobody else, and every folder above it is owned by root or that user and
/// writable by nobody else (or sticky, like /tmp, where others cannot rename what is not theirs).
/// `CVHOST_UNSAFE_PLUGIN_FILES=1` lets such a file load anyway (said once on stderr).
enum PluginFileTrust {
    static let override = "CVHOST_UNSAFE_PLUGIN_FILES"
    /// The paths loaded under the override: its warning is said once for each.
    private static let warned = Locked(Set<String>())

    /// - Throws: `.unsafeFile` naming the file or folder, who can change it, and the fix.
    static func check(_ path: String) throws(PluginLoadError) {
        guard let problem = problem(path) else { return }
        if getenv(override).map({ String(cString: $0) }) == "1" {
            if warned.withLock({ $0.insert(path).inserted }) { Log.warning("loading \(path) although \(problem) (\(override)=1)") }
            return
        }
        throw PluginLoadError(.unsafeFile, "plugin file \(path) is not loaded: \(problem), so another user could change the code "
                              + "cvhost runs; fix it (chown/chmod go-w), or set \(override)=1 to load it anyway")
    }

    /// What makes `path` unsafe, or nil.
    static func problem(_ path: String) -> String? {
        let me = geteuid()
        var info = stat()
        guard PathText.withFileSystemPath(path, { stat($0, &info) }) == 0 else { return nil }  // the loader says why it cannot be read
        if let who = changer(info, me: me, allowSticky: false) { return "the file \(who)" }
        // The folders above it, from the real path (a symbolic link's own folder does not matter:
        // the file it leads to is what is loaded).
        guard let real = PathText.withFileSystemPath(path, { realpath($0, nil) }) else { return nil }
        defer { free(real) }
        var folder = PathText.text(cString: real)
        while folder != "/" {
            folder = (folder as NSString).deletingLastPathComponent
            guard PathText.withFileSystemPath(folder, { stat($0, &info) }) == 0 else { return nil }
            if let who = changer(info, me: me, allowSticky: true) { return "its folder \(folder) \(who)" }
        }
        return nil
    }

    /// Who other than root and `me` can change a file or folder with `info`, said as a phrase.
    private static func changer(_ info: stat, me: uid_t, allowSticky: Bool) -> String? {
        if info.st_uid != 0 && info.st_uid != me {
            return "belongs to another user (uid \(info.st_uid))"
        }
        let sticky = allowSticky && info.st_mode & S_ISVTX != 0
        if info.st_mode & S_IWOTH != 0 && !sticky { return "can be written by every user" }
        if info.st_mode & S_IWGRP != 0 && !sticky && info.st_gid != 0 { return "can be written by its group (gid \(info.st_gid))" }
        return nil
    }
}
