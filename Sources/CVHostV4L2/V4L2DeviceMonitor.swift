import CVHostCore
import Foundation
import Glibc

/// Camera hot-plug while a session runs, like AVCaptureDevice's wasConnected/wasDisconnected
/// notifications: watches /dev with inotify and reports video-capture nodes that appear or go.
///
/// A known camera's node removed is reported at once (a driver reloaded may bring the node back
/// within milliseconds). A node created or changed only says that something may have come, so
/// the monitor then lists the capture nodes again and reports the new ones (by path and unique
/// ID): shortly after the last event and once more a second later, as a new node may not be
/// openable until udev has set its permissions or the driver has finished registering it.
public final class V4L2DeviceMonitor: @unchecked Sendable {
    // @unchecked Sendable: `known` and the pending rescans are touched by the monitor thread
    // only; `stopPipe` is set once in init and read by both threads; `done` has its own lock.

    public enum Change: Sendable {
        case connected(V4L2NodeInfo)
        case disconnected(V4L2NodeInfo)
    }

    /// How soon after the last /dev event the nodes are listed, and the second look after it.
    static let settleNs: UInt64 = 150_000_000
    static let secondLookNs: UInt64 = 1_000_000_000

    /// Where the nodes are; sysfs names them as they are here.
    private static let directory = "/dev"
    private let onChange: @Sendable (Change) -> Void
    private let inotifyFD: Int32
    private let stopPipe: (read: Int32, write: Int32)  // cancel() writes a byte to wake the thread
    private var known: [V4L2NodeInfo]
    private var rescans: [UInt64] = []  // monotonic times at which to list the nodes again
    private let done = ConditionLock()
    private var running = true

    /// Starts watching. `onChange` is called on the monitor's own thread, one change at a time.
    /// Throws when inotify is unavailable (then hot-plug is simply not reported).
    public init(onChange: @escaping @Sendable (Change) -> Void) throws {
        let directory = Self.directory
        self.onChange = onChange
        inotifyFD = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard inotifyFD >= 0 else { throw CaptureError(.inputUnavailable, "cannot watch \(directory) for cameras", cause: .current) }
        guard inotify_add_watch(inotifyFD, directory, UInt32(IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_TO | IN_MOVED_FROM)) >= 0 else {
            let reason = Errno.current
            close(inotifyFD)
            throw CaptureError(.inputUnavailable, "cannot watch \(directory) for cameras", cause: reason)
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            let reason = Errno.current
            close(inotifyFD)
            throw CaptureError(.inputUnavailable, "cannot watch \(directory) for cameras", cause: reason)
        }
        stopPipe = (ends[0], ends[1])
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        // Taken before the thread starts, so a camera plugged in from now on is a change.
        known = V4L2Discovery.captureNodes()
        SystemThread.start("cvhost.device-monitor") { [self] in run() }
    }

    /// Stops watching and returns once the monitor thread has ended: no change is reported after.
    public func cancel() {
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
        done.lock()
        while running { done.wait() }
        done.unlock()
    }

    deinit {
        close(inotifyFD)
        close(stopPipe.read)
        close(stopPipe.write)
    }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let now = HostClock.monotonicNs()
            let timeoutMs = rescans.min().map { $0 > now ? Int32(min(($0 - now) / 1_000_000 + 1, 60_000)) : 0 } ?? -1
            var fds = [pollfd(fd: inotifyFD, events: Int16(POLLIN), revents: 0), pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)]
            let (ready, _) = SystemCall.retrying { poll(&fds, 2, timeoutMs) }
            if ready < 0 { break }
            if fds[1].revents != 0 { break }
            if fds[0].revents & Int16(POLLIN) != 0 {
                let n = read(inotifyFD, &buffer, buffer.count)
                for (name, mask) in n > 0 ? Self.events(buffer.prefix(n)) : [] where name.hasPrefix("video") {
                    if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 {
                        let path = Self.directory + "/" + name
                        for gone in known where gone.path == path { onChange(.disconnected(gone)) }
                        known.removeAll { $0.path == path }
                    }
                    let at = HostClock.monotonicNs()
                    rescans = [at + Self.settleNs, at + Self.secondLookNs]
                }
            }
            let due = HostClock.monotonicNs()
            if rescans.contains(where: { $0 <= due }) {
                rescans.removeAll { $0 <= due }
                rescan()
            }
        }
        done.withLock {
            running = false
            done.broadcast()
        }
    }

    /// Lists the capture nodes and reports what went (first) and what came since the last list
    /// (a node can go without a delete event of its own: its driver replaced by another's).
    private func rescan() {
        let now = V4L2Discovery.captureNodes()
        func same(_ a: V4L2NodeInfo, _ b: V4L2NodeInfo) -> Bool { a.path == b.path && a.uniqueID == b.uniqueID }
        for gone in known where !now.contains(where: { same($0, gone) }) { onChange(.disconnected(gone)) }
        for came in now where !known.contains(where: { same($0, came) }) { onChange(.connected(came)) }
        known = now
    }

    /// The names and masks of a batch of inotify events. Each event is a fixed header (wd, mask,
    /// cookie, len: 16 bytes) and `len` bytes of NUL-padded name.
    static func events(_ bytes: ArraySlice<UInt8>) -> [(name: String, mask: UInt32)] {
        var found: [(String, UInt32)] = []
        var offset = bytes.startIndex
        let header = MemoryLayout<inotify_event>.size
        func u32(at i: Int) -> UInt32 { bytes[i..<(i + 4)].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) } }
        while offset + header <= bytes.endIndex {
            let mask = u32(at: offset + 4), len = Int(u32(at: offset + 12))
            let name = bytes[(offset + header)..<min(offset + header + len, bytes.endIndex)].prefix { $0 != 0 }
            found.append((String(decoding: name, as: UTF8.self), mask))
            offset += header + len
        }
        return found
    }
}
