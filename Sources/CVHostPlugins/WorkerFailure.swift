/// Why a plugin's worker process ended, or was ended: what `plugin.crashed` says as its `reason`.
enum WorkerFailure: Sendable {
    /// Its socket closed: it crashed (a signal: "signal") or exited ("exit").
    case closed
    /// A call outlasted its time limit: killed ("timeout").
    case timeout
    /// Its resident memory passed the limit: killed ("memory").
    case memory(UInt64)
    /// It sent what the worker protocol does not allow: killed ("protocol").
    case protocolError
    /// A restart failed: the plugin could not be loaded or created again ("start_failed").
    case startFailed

    /// Whether cvhost must kill the worker (it is still running).
    var needsKill: Bool {
        switch self {
        case .timeout, .memory, .protocolError: true
        case .closed, .startFailed: false
        }
    }

    /// The `reason` of `plugin.crashed`, given how the worker ended.
    func reason(_ termination: WorkerProcess.Termination?) -> String {
        switch self {
        case .timeout: "timeout"
        case .memory: "memory"
        case .protocolError: "protocol"
        case .startFailed: "start_failed"
        case .closed:
            if case .signaled = termination { "signal" } else { "exit" }
        }
    }
}
