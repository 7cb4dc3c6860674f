import CVHostCore
import CVHostOutput

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

    static func make(_ message: WorkerMessage, on channel: WorkerChannel, timeoutMs: Int, startedNs: UInt64,
                     stamp: HostServices.FrameStamp?, results: Results) -> Outcome {
        guard channel.send(message) else { return .failed(.closed) }
        let deadline = startedNs + UInt64(timeoutMs) * 1_000_000
        var lines: [OutputLine] = []
        var received = 0, receivedBytes = 0
        while true {
            let now = HostClock.monotonicNs()
            let left = now >= deadline ? 0 : Int32(min(UInt64(Int32.max), (deadline - now + 999_999) / 1_000_000))
            switch channel.receive(timeoutMs: left) {
            case .message(.result(let type, let json), _):
                received += 1
                receivedBytes += type.count + json.count
                guard received <= maxResultsPerCall, receivedBytes <= maxResultBytesPerCall else {
                    Log.error("plugin \(results.plugin) emitted more than \(maxResultsPerCall) results or \(maxResultBytesPerCall >> 20) MiB "
                              + "in one call: a worker may not (its results of that call are dropped)", source: results.source)
                    return .failed(.protocolError)
                }
                do {
                    let checked = try type.withUnsafeBufferPointer { t in
                        try json.withUnsafeBufferPointer { try EmittedResult.check(type: t, json: $0) }
                    }
                    lines.append(EmittedResult(type: checked.type, json: checked.json, frame: stamp)
                        .line(source: results.source, plugin: results.plugin, pluginIndex: results.pluginIndex))
                } catch {
                    results.invalid.record { "\(error) (\($0) so far)" }
                }
            case .message(.done(let status), _):
                return .done(status: status, lines: lines)
            case .timedOut:
                return .failed(.timeout)
            case .closed:
                return .failed(.closed)
            case .message, .failed:
                return .failed(.protocolError)
            }
        }
    }
}
