import Glibc

/// A folder cvhost keeps files in for itself (a broker output's spool; the evidence of a later
/// room), that it trusts only when no one else can change it: it is a real folder (not a symbolic
/// link), owned by the user cvhost runs as, and writable by no group and no other user, as ssh
/// asks of its keys' folder. Every file in it is opened relative to the folder's descriptor,
/// never through a symbolic link (O_NOFOLLOW), so a name planted there (or a folder swapped after
/// the check) cannot lead cvhost, run as root, to truncate or write another file.
public final class PrivateFolder: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; the descriptor is only read.
    /// The folder as the user named it.
    public let path: String
    private let descriptor: Int32

    /// Why a folder is not used: one line, naming it, what is wrong and what to do.
    public struct Refusal: Error, CustomStringConvertible {
        public let description: String
        /// The system call's error, when one failed (nil: the folder was found untrustworthy).
        public let cause: Errno?
    }

    /// Opens the folder `path`, making it (0700) when it is missing.
    /// - Parameters:
    ///   - role: what the folder is, for errors ("the spool folder").
    ///   - setting: the setting that names it, for errors ("spool=").
    /// - Throws: `Refusal` when it cannot be made or opened, or another user could change it.
    public init(_ path: String, role: String, setting: String) throws(Refusal) {
        self.path = path
        let made = PathText.withFileSystemPath(path) { mkdir($0, 0o700) } == 0
        if !made && errno != EEXIST {
            throw Refusal(description: "cannot make \(role) \(path): \(Errno.current) (\(setting))", cause: .current)
        }
        let fd = PathText.withFileSystemPath(path) { Glibc.open($0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else {
            let cause = Errno.current
            if cause.rawValue == ELOOP || cause.rawValue == ENOTDIR {
                throw Refusal(description: "\(role) \(path) is not a folder (a symbolic link or a file): name a real folder (\(setting))", cause: cause)
            }
            throw Refusal(description: "cannot open \(role) \(path): \(cause) (\(setting))", cause: cause)
        }
        var info = stat()
        fstat(fd, &info)
        if let problem = PrivateFolder.problem(info) {
            close(fd)
            throw Refusal(description: "\(role) \(path) \(problem): cvhost keeps its files only in a folder of its own user that no one "
                          + "else can write; chown it and chmod 700 it, or name another folder (\(setting))", cause: nil)
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// What makes a folder with `info` one that another user could change, said as a phrase, or nil.
    public static func problem(_ info: stat) -> String? {
        if info.st_uid != geteuid() { return "belongs to another user (uid \(info.st_uid))" }
        if info.st_mode & S_IWOTH != 0 { return "can be written by every user" }
        if info.st_mode & S_IWGRP != 0 { return "can be written by its group (gid \(info.st_gid))" }
        return nil
    }

    /// Opens the file `name` in the folder, never through a symbolic link: `flags` (O_RDONLY,
    /// O_RDWR | O_CREAT, ...) with O_NOFOLLOW and O_CLOEXEC added. A file made is 0600.
    /// Only a regular file is opened: the open itself never waits (O_NONBLOCK, cleared once the
    /// file is found to be a regular one), so a FIFO planted under the name cannot hold the
    /// caller (a read of the index at start, a client's request) for good.
    /// - Returns: the descriptor, or the error (ELOOP for a symbolic link; EEXIST with O_EXCL;
    ///   EINVAL for what is no regular file).
    public func open(_ name: String, _ flags: Int32) -> Result<Int32, Errno> {
        let fd = openat(descriptor, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            // A FIFO with no reader refuses a writer that will not wait: it is no file of cvhost's either.
            return .failure(errno == ENXIO ? Errno(rawValue: EINVAL) : .current)
        }
        var info = stat()
        // Only regular files: a FIFO or a device is no file of cvhost's (and a FIFO could block a read).
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            return .failure(Errno(rawValue: EINVAL))
        }
        if flags & O_NONBLOCK == 0 { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
        return .success(fd)
    }

    /// Takes the folder for this process: an exclusive flock(2) on the folder itself, held while
    /// this value lives and let go however the process ends (a kill, a crash). - Returns: false
    /// when another descriptor of the folder holds it: another process, or this one having
    /// opened the folder twice (two settings naming one folder).
    public func lockExclusively() -> Bool { flock(descriptor, LOCK_EX | LOCK_NB) == 0 }

    /// Removes the file `name` from the folder (not what a symbolic link leads to: the link itself).
    @discardableResult
    public func remove(_ name: String) -> Bool { unlinkat(descriptor, name, 0) == 0 }

    /// Gives the file `from` the name `to` (replacing a file of that name), within the folder.
    public func rename(_ from: String, to: String) -> Errno? {
        renameat(descriptor, from, descriptor, to) == 0 ? nil : .current
    }

    /// Writes `bytes` as the file `name` whole, or leaves it as it was: to a file beside it
    /// (`.NAME.new-PID`, synced), then renamed over it, so that a kill or a power cut leaves the
    /// old file or the new one, never half of one. - Returns: the error, nil when written.
    public func replace(_ name: String, with bytes: [UInt8]) -> Errno? {
        let temporary = ".\(name).new-\(getpid())"
        remove(temporary)
        switch open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_TRUNC) {
        case .failure(let e): return e
        case .success(let fd):
            let (written, writeError) = bytes.withUnsafeBytes { b in SystemCall.retrying { Glibc.write(fd, b.baseAddress, b.count) } }
            let synced = fsync(fd) == 0 ? nil : Errno.current
            close(fd)
            guard written == bytes.count, synced == nil else {
                remove(temporary)
                return writeError ?? synced ?? Errno(rawValue: ENOSPC)
            }
            if let e = rename(temporary, to: name) {
                remove(temporary)
                return e
            }
            return nil
        }
    }

    /// Bytes free for this user on the folder's file system.
    public var freeBytes: UInt64? {
        var info = statvfs()
        guard fstatvfs(descriptor, &info) == 0 else { return nil }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }

    /// The names of the entries in the folder (not `.` and `..`), in no order.
    public func names() -> [String] {
        let copy = dup(descriptor)
        guard copy >= 0, let dir = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return []
        }
        defer { closedir(dir) }
        rewinddir(dir)
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { PathText.text($0.prefix { $0 != 0 }) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
