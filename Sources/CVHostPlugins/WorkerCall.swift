import CVHostCore
import CVHostLines

/// One call to a plugin's worker process on one lane's socket: the message sent, then the results
/// collected until the worker says the call is done, the worker dies, or the call outlasts its time
/// limit. The results are checked here as in cvhost's own process: the worker runs the plugin's
/// code and is not to be trusted.
enum WorkerCall {
    enum Outcome {
        /// The call returned `status` having emitted `lines`.
        case done(status: Int32, lines: [OutputLine])
        /// The worker died or broke the protocol during the call, or the call timed out.
        case failed(WorkerFailure)
    }

    /// Who the results are from, for their envelope and for counting those refused.
    struct Results {
        let source: String
        let plugin: String
        let pluginIndex: Int
        let invalid: RepeatedWarning
    }

    /// What one call may emit, at most: a call's results are held until it is done (they are
    /// written together, in frame order), so a worker must not make cvhost hold more. Past either,
    /// the call is a protocol error: the worker is killed and restarted, the frame failed.
    static let maxResultsPerCall = 10_000
    static let maxResultBytesPerCall = 16 << 20

    /// How often a call's worker memory is looked at while the call runs, when it has a limit.
    static let memoryLookMs: UInt64 = 100

    /// - Parameter memoryOverLimit: looked at every `memoryLookMs` while the call runs (a worker that
    ///   allocates gigabytes inside one call is stopped then, not after it returns): the worker's
    ///   resident bytes when they are past its limit, else nil.
    static func make(_ message: WorkerMessage, on channel: WorkerChannel, timeoutMs: Int, startedNs: UInt64,
                     stamp: HostServices.FrameStamp?, results: Results, memoryOverLimit: (() -> UInt64?)? = nil) -> Outcome {
        make(message, on: channel, timeoutMs: timeoutMs, startedNs: startedNs, answers: [(stamp, results)], memoryOverLimit: memoryOverLimit)[0]
    }

    /// A message answered once for each of `answers` in turn (a batch: each frame's results, then
    /// its done), each answer's results stamped with its frame and named for its input. The call
    /// may take `timeoutMs` for each answer; a failure fails every answer not yet given.
    static func make(_ message: WorkerMessage, on channel: WorkerChannel, timeoutMs: Int, startedNs: UInt64,
                     answers: [(stamp: HostServices.FrameStamp?, results: Results)], memoryOverLimit: (() -> UInt64?)? = nil) -> [Outcome] {
        guard channel.send(message) else { return answers.map { _ in .failed(.closed) } }
        let deadline = startedNs + UInt64(timeoutMs) * 1_000_000 * UInt64(max(1, answers.count))
        var outcomes: [Outcome] = []
        for (stamp, results) in answers {
            let outcome = answer(on: channel, deadline: deadline, stamp: stamp, results: results, memoryOverLimit: memoryOverLimit)
            outcomes.append(outcome)
            if case .failed = outcome { return outcomes + Array(repeating: outcome, count: answers.count - outcomes.count) }
        }
        return outcomes
    }

    /// One answer: results until done (or a failure).
    private static func answer(on channel: WorkerChannel, deadline: UInt64, stamp: HostServices.FrameStamp?, results: Results,
                               memoryOverLimit: (() -> UInt64?)?) -> Outcome {
        var lines: [OutputLine] = []
        var received = 0, receivedBytes = 0
        while true {
            let now = HostClock.monotonicNs()
            var leftMs = now >= deadline ? 0 : (deadline - now + 999_999) / 1_000_000
            if memoryOverLimit != nil { leftMs = min(leftMs, memoryLookMs) }
            let reachesDeadline = now + leftMs * 1_000_000 >= deadline
            switch channel.receive(timeoutMs: Int32(min(UInt64(Int32.max), leftMs))) {
            case .message(.result(let type, let json), _):
                received += 1
                receivedBytes += type.count + json.count
                guard received <= maxResultsPerCall, receivedBytes <= maxResultBytesPerCall else {
                    Log.error("plugin \(results.plugin) emitted more than \(maxResultsPerCall) results or \(maxResultBytesPerCall >> 20) MiB "
                              + "in one call: a worker may not (its results of that call are dropped)", source: results.source)
                    return .failed(.protocolError)
                }
                do {
                    var checked = try type.withUnsafeBufferPointer { t in
                        try json.withUnsafeBufferPointer { try EmittedResult.check(type: t, json: $0) }
                    }
                    checked.frame = stamp
                    lines.append(checked.line(source: results.source, plugin: results.plugin, pluginIndex: results.pluginIndex))
                } catch {
                    results.invalid.record { "\(error) (\($0) so far)" }
                }
            case .message(.done(let status), _):
                return .done(status: status, lines: lines)
            case .timedOut:
                if let rss = memoryOverLimit?() { return .failed(.memory(rss)) }
                if reachesDeadline { return .failed(.timeout) }
            case .closed:
                return .failed(.closed)
            case .message(.failed(_, let message), _):
                // The worker did not understand cvhost (a kind it does not know): its own words.
                Log.error("plugin \(results.plugin)'s worker: \(message)", source: results.source)
                return .failed(.protocolError)
            case .message, .failed, .unknownKind:
                return .failed(.protocolError)
            }
        }
    }
}
