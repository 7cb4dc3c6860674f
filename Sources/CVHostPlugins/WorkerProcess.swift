import CVHostCore
import CWorkerIPC
import Foundation
import Glibc

/// A plugin's worker process as cvhost sees it: its pid, one channel per instance, and how it ended.
final class WorkerProcess: @unchecked Sendable {
    // @unchecked Sendable: pid and channels are fixed; `ended` is set once, under IsolatedInstances' lock.

    let pid: pid_t
    /// cvhost's end of each instance's socket.
    let channels: [WorkerChannel]
    /// Counts the workers a runner started: tells a restarted worker from the one before.
    let generation: UInt64
    /// What the worker's descendants carry in their environment (WorkerDescendants).
    private let mark: String
    private var ended: Termination?

    /// How a worker ended.
    enum Termination: Equatable {
        case exited(Int32)
        case signaled(Int32)
    }

    /// Starts `program` as a worker with one socket per instance (descriptors 3, 4, ...).
    init(program: WorkerProgram, instances: Int, generation: UInt64) throws(PluginLoadError) {
        var mine: [WorkerChannel] = [], theirs: [WorkerChannel] = []
        for _ in 0..<instances {
            let (a, b) = try WorkerChannel.pair()
            mine.append(a)
            theirs.append(b)
        }
        defer { theirs.forEach { $0.close() } }
        let exe = program.executable
        let args = [exe] + program.arguments + [String(instances), String(getpid())]
        let mark = WorkerDescendants.newMark()
        // CVHOST_LOG_LEVEL: what cvhost writes on stderr (-q: warning), for a plugin's own messages to follow.
        let environment = WorkerProcess.withoutSecrets(program.environment)
            .merging([WorkerDescendants.markVariable: mark, "CVHOST_LOG_LEVEL": Log.level.name]) { _, new in new }
        let folder = program.workingFolder
        let fds = theirs.map(\.fd)
        let stderrDescriptor = WorkerStderr.descriptor
        let (rc, child) = WorkerProcess.spawner.run {
            var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
            var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { (argv + envp).forEach { free($0) } }
            var child: pid_t = 0
            let rc = fds.withUnsafeBufferPointer { fdList in
                PathText.withFileSystemPath(folder ?? "") { cwd in
                    cvhost_spawn_worker(exe, &argv, &envp, fdList.baseAddress, Int32(fds.count), folder == nil ? nil : cwd, stderrDescriptor, &child)
                }
            }
            return (rc, child)
        }
        guard rc == 0 else {
            mine.forEach { $0.close() }
            throw PluginLoadError(.createFailed, "cannot start a plugin worker (\(exe))", cause: Errno(rawValue: rc))
        }
        pid = child
        self.mark = mark
        channels = mine
        self.generation = generation
    }

    /// An environment without cvhost's secrets ($CVHOST_MQTT_PASSWORD, $CVHOST_NATS_TOKEN,
    /// $CVHOST_HTTP_TOKEN: every CVHOST_*_PASSWORD and CVHOST_*_TOKEN): a plugin's worker is
    /// the plugin's code, which has no business with the outputs' passwords or the server's token.
    static func withoutSecrets(_ environment: [String: String]) -> [String: String] {
        environment.filter { name, _ in !(name.hasPrefix("CVHOST_") && (name.hasSuffix("_PASSWORD") || name.hasSuffix("_TOKEN"))) }
    }

    /// cvhost's ends are closed only when no call holds the worker any more: closed earlier, their
    /// numbers could be reused by the next worker's sockets while another instance's thread still reads.
    deinit {
        channels.forEach { $0.close() }
    }

    /// The thread every worker is started from. A worker dies with the THREAD that started it
    /// (PR_SET_PDEATHSIG follows the parent thread, not the process), so workers are started from
    /// one thread that lives as long as cvhost, not from the delivery thread that restarts one.
    private static let spawner = SpawnThread()

    /// Kills the worker (SIGKILL: a hung or runaway plugin gets no say).
    func kill() {
        if ended == nil { _ = Glibc.kill(pid, SIGKILL) }
    }

    /// Waits for the worker to end (call after it closed its sockets or was killed), and ends
    /// every process it left behind.
    /// - Returns: how it ended.
    @discardableResult
    func reap() -> Termination {
        if let ended { return ended }
        var status: Int32 = 0
        SystemCall.retrying { waitpid(pid, &status, 0) }
        WorkerDescendants.end(group: pid, mark: mark)
        // WIFSIGNALED / WTERMSIG / WEXITSTATUS, which Swift does not import (macros).
        let signal = status & 0x7F
        let result: Termination = signal != 0 && signal != 0x7F ? .signaled(signal) : .exited((status >> 8) & 0xFF)
        ended = result
        return result
    }

    /// The worker's resident memory, in bytes (nil when it cannot be read).
    var residentBytes: UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = UInt64(fields[1]) else { return nil }
        return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// The name of a signal, as people know it ("SIGSEGV").
func signalName(_ signal: Int32) -> String {
    switch signal {
    case SIGSEGV: "SIGSEGV"
    case SIGABRT: "SIGABRT"
    case SIGBUS: "SIGBUS"
    case SIGFPE: "SIGFPE"
    case SIGILL: "SIGILL"
    case SIGKILL: "SIGKILL"
    case SIGTERM: "SIGTERM"
    case SIGINT: "SIGINT"
    case SIGTRAP: "SIGTRAP"
    case SIGSYS: "SIGSYS"
    default: "signal \(signal)"
    }
}

/// A thread that lives as long as the process and runs what it is given, one thing at a time.
private final class SpawnThread: @unchecked Sendable {
    // @unchecked Sendable: `work` is behind `lock`.
    private let lock = ConditionLock()
    private var work: [() -> Void] = []

    init() {
        SystemThread.start("cvhost.worker-spawner") { [self] in
            while true {
                lock.lock()
                while work.isEmpty { lock.wait() }
                let next = work.removeFirst()
                lock.unlock()
                next()
            }
        }
    }

    /// Runs `body` on the thread and waits for its result.
    func run<R>(_ body: @escaping () -> R) -> R {
        let done = ConditionLock()
        nonisolated(unsafe) var result: R?
        lock.withLock {
            work.append {
                let r = body()
                done.withLock {
                    result = r
                    done.broadcast()
                }
            }
            lock.broadcast()
        }
        done.lock()
        while result == nil { done.wait() }
        done.unlock()
        return result!
    }
}
