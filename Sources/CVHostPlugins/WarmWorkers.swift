import CVHostCore
import Glibc

/// A Python plugin's first worker, started while the plugin is described: the worker imports the
/// plugin file at once (`--preload`), so that the two imports of its modules (numpy, OpenCV,
/// onnxruntime: 0.4 s and more each), one to read what it declares and one to run it, are made side
/// by side instead of one after the other. The run's first start of that plugin takes it
/// (WorkerSupervisor); any not taken are stopped once the run's plugins are created (discardAll).
public enum WarmWorkers {
    private static let parked = Locked<[String: [WorkerProcess]]>([:])

    /// Workers of one program are interchangeable: the program names the plugin file.
    private static func key(_ program: WorkerProgram) -> String {
        ([program.executable, program.workingFolder ?? ""] + program.arguments).joined(separator: "\u{0}")
    }

    static func park(_ worker: WorkerProcess, of program: WorkerProgram) {
        parked.withLock { $0[key(program), default: []].append(worker) }
    }

    /// A parked worker of `program`, if there is one.
    static func take(_ program: WorkerProgram) -> WorkerProcess? {
        parked.withLock { $0[key(program)]?.popLast() }
    }

    /// Stops every worker not taken (a run that ended before creating its plugin, a plugin named twice).
    public static func discardAll() {
        let left = parked.withLock { p in
            defer { p = [:] }
            return p.values.joined()
        }
        for worker in left {
            worker.kill()
            _ = worker.reap()
        }
    }
}
