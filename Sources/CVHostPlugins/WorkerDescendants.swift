import CVHostCore
import CWorkerIPC
import Foundation
import Glibc

/// The processes a plugin's worker started (a model server, `subprocess.Popen`, a fork of the
/// worker itself) end with the worker: none outlives the run holding a camera, a port or the
/// worker's sockets.
///
/// Two nets catch them. The worker's process group (each worker leads one of its own) holds every
/// process it started that did not leave it: killed as a whole. A process that left the group
/// (`start_new_session`, a double fork with setsid) is found by a mark in its environment, which
/// every descendant inherits unless it clears its environment: when cvhost is a child subreaper
/// (`adoptOrphans()`, which the executable calls), such a process is reparented to cvhost once its
/// parent ends, and cvhost ends the ones that carry a finished worker's mark.
public enum WorkerDescendants {
    /// The environment variable that marks a worker's descendants: cvhost's pid and the worker's serial (`PID.SERIAL`).
    static let markVariable = "CVHOST_WORKER_MARK"
    private static let serial = Locked<UInt64>(0)

    /// A mark no other worker of this process has.
    static func newMark() -> String {
        "\(getpid()).\(serial.withLock { $0 += 1; return $0 })"
    }

    /// Makes this process the reaper of its orphaned descendants (PR_SET_CHILD_SUBREAPER), so that
    /// those that left a worker's process group can still be ended. For the executable to call:
    /// it changes how the whole process is parented.
    /// - Returns: false where the kernel refuses (then only the process group is ended).
    @discardableResult
    public static func adoptOrphans() -> Bool {
        cvhost_become_subreaper() == 0
    }

    /// Ends what is left of a worker that has ended: its process group, then every process that
    /// was reparented to cvhost and carries `mark` (each one's own children are reparented to
    /// cvhost as it ends, so this looks again until none is left, at most a few rounds).
    static func end(group leader: pid_t, mark: String) {
        _ = kill(-leader, SIGKILL)
        for _ in 0..<8 {
            let found = adopted(carrying: mark)
            if found.isEmpty { return }
            for pid in found { _ = kill(pid, SIGKILL) }
            for pid in found {
                var status: Int32 = 0
                SystemCall.retrying { waitpid(pid, &status, 0) }
            }
        }
    }

    /// The living children of this process whose environment holds `mark`.
    private static func adopted(carrying mark: String) -> [pid_t] {
        let me = getpid()
        let entry = Array("\(markVariable)=\(mark)".utf8)
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { name -> pid_t? in
            guard let pid = pid_t(name), pid != me, parent(of: pid) == me,
                  let environment = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return nil }
            // Entries are NUL-separated: the mark must be a whole entry, not the prefix of a longer one.
            return environment.split(separator: 0).contains { $0.elementsEqual(entry) } ? pid : nil
        }
    }

    /// The parent's pid from /proc/PID/stat (its fourth field, after the name in parentheses).
    private static func parent(of pid: pid_t) -> pid_t? {
        guard let stat = FileManager.default.contents(atPath: "/proc/\(pid)/stat"),
              let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count > 1 else { return nil }
        return pid_t(String(decoding: fields[1], as: UTF8.self))
    }
}
