import CVHostCore
import CVHostLines

/// The run's output: every line to every `--output`. stdout is written at once by the thread
/// that writes the line (as it always was: a reader sees each line at once, and a pipe that
/// is not read holds the run back, which `cvhost run | consumer` relies on); every other sink has
/// its own bounded queue and thread (`QueuedSink`), so a slow disk or an absent broker never
/// holds back the capture or the plugins.
public final class OutputRouter: OutputSink {
    /// stdout, when it is an output.
    public let stdout: JSONLineWriter?
    /// What of the lines stdout gets.
    private let selection: StdoutSelection
    private let queued: [QueuedSink]
    /// Each queued sink's `events=`, in the same order (nil: every line).
    private let selections: [EventSelection?]
    /// Each queued sink's retained states (an MQTT output's `counts=`, `discovery=`), in the same order.
    private let states: [MQTTStateTopics?]
    /// Sinks that see every line but are not outputs (the live view's event stream): they are
    /// not counted in the metrics' output section and have no end to wait for.
    private let taps: [OutputSink]
    private let relay: StatusRelay
    private let finished = Locked<[SinkStatistics]?>(nil)
    private let requiredFailureText: Locked<String?>
    /// Which required=true output refused a line for good, and why (the run ends with exit 5).
    public var requiredFailure: String? { requiredFailureText.withLock { $0 } }
    /// With `--field NAME`: whether a result had it; until one did, the data fields results had
    /// (at most `maxFieldNames`), to name in the warning that it never came.
    private let fieldSeen = Locked<(seen: Bool, others: Set<String>)>((false, []))
    private static let maxFieldNames = 32

    /// Opens every destination: files are opened, brokers are connected to in the background.
    /// - Parameters:
    ///   - stdoutDescriptor: where stdout's lines go (see `StandardOutput.claim`).
    ///   - onStdoutClosed: stdout's reader went away or a write failed (`JSONLineWriter`).
    ///   - onRequiredFailed: a required=true output refused a line for good (`requiredFailure` says which, and why).
    ///   - connectTimeout: how long a `required=true` broker may take to accept the connection.
    ///   - taps: sinks that see every line too (their `write` must not wait).
    ///   - stdoutSelection: what of the lines stdout gets (every other output gets every line).
    /// - Throws: `OutputError` naming the destination: a file that cannot be opened, a required
    ///   broker that cannot be reached.
    public init(destinations: [OutputDestination], stdoutDescriptor: Int32, connectTimeout: Double, taps: [OutputSink] = [],
                stdoutSelection: StdoutSelection = .everything, onStdoutClosed: @escaping @Sendable () -> Void,
                onRequiredFailed: @escaping @Sendable () -> Void = {}) throws(OutputError) {
        selection = stdoutSelection
        let requiredFailureBox = Locked<String?>(nil)
        requiredFailureText = requiredFailureBox
        let relay = StatusRelay()
        self.relay = relay
        var stdout: JSONLineWriter?
        var queued: [QueuedSink] = []
        var selections: [EventSelection?] = []
        var states: [MQTTStateTopics?] = []
        var required: [BrokerSink] = []
        do throws(OutputError) {
            for d in destinations {
                let name = d.name
                func broker(_ q: OutputDestination.QueueSettings, window: Int, _ connect: @escaping () throws(OutputError) -> BrokerConnection) throws(OutputError) {
                    var refused: (@Sendable (String) -> Void)?
                    if q.required {
                        refused = { (why: String) -> Void in
                            requiredFailureBox.withLock { failure in
                                if failure == nil { failure = "\(name) refused a line for good (\(why))" }
                            }
                            onRequiredFailed()
                        }
                    }
                    let sink = try BrokerSink(name: name, queue: q, window: window, connect: connect, onStatus: { connected, reason, waiting in
                        relay.tell(OutputStatusLines.line(output: name, connected: connected, reason: reason, queued: waiting), except: name)
                    }, onRefusedForGood: refused)
                    queued.append(sink)
                    if q.required { required.append(sink) }
                }
                switch d {
                case .stdout:
                    stdout = stdout ?? JSONLineWriter(fileDescriptor: stdoutDescriptor, onClosed: onStdoutClosed)
                case .file(let f):
                    queued.append(try FileSink(f, name: name, readerTimeout: connectTimeout))
                    states.append(nil)
                case .mqtt(let m):
                    let kept = m.keepsStates ? MQTTStateTopics(prefix: m.prefix, discoveryPrefix: m.discoveryPrefix) : nil
                    try broker(m.queue, window: MQTTConnection.windowSize) { () throws(OutputError) in try MQTTConnection(m, states: kept) }
                    states.append(kept)
                case .kafka(let k):
                    try broker(k.queue, window: KafkaConnection.windowSize) { () throws(OutputError) in try KafkaConnection(k) }
                    states.append(nil)
                case .nats(let n):
                    try broker(n.queue, window: NATSConnection.windowSize) { () throws(OutputError) in try NATSConnection(n, name: name) }
                    states.append(nil)
                }
                if let q = d.queueSettings { selections.append(q.events) }
            }
        } catch {
            queued.forEach { _ = $0.finish(deadlineNs: 0) }
            throw error
        }
        self.stdout = stdout
        self.queued = queued
        self.selections = selections
        self.states = states
        for (sink, state) in zip(queued, states) {
            state?.opening().forEach { sink.write($0) }
        }
        self.taps = taps
        relay.connect(self)
        let deadline = HostClock.monotonicNs() + UInt64(connectTimeout * 1e9)
        for sink in required {
            if let failure = sink.firstConnection(untilNs: deadline) {
                finishNow()
                throw OutputError(.brokerUnavailable, "cannot connect to \(sink.name): \(failure) (the output is required=true)")
            }
        }
    }

    public func write(_ line: OutputLine) {
        write(line, except: nil)
    }

    /// Writes to every sink but the one named `except`.
    fileprivate func write(_ line: OutputLine, except name: String?) {
        // What an input saw after its fleet lease lapsed is another node's to write now.
        guard SourceLeases.admits(line.route) else { return }
        if let stdout {
            if let selected = selection.select(line) {
                if case .field = selection { fieldSeen.withLock { $0.seen = true } }
                stdout.write(selected)
            } else if case .field = selection, line.route.event == "result", !fieldSeen.withLock({ $0.seen }) {
                let names = StdoutSelection.dataFieldNames(line)
                fieldSeen.withLock { f in
                    for n in names where f.others.count < Self.maxFieldNames { f.others.insert(n) }
                }
            }
        }
        for ((sink, selection), state) in zip(zip(queued, selections), states) where sink.name != name {
            if selection?.admits(line.route.event) ?? true { sink.write(line) }
            state?.publish(after: line) { sink.write($0) }
        }
        for tap in taps { tap.write(line) }
    }

    /// Makes room for `n` lines in every queue now (dropping, and counting, the oldest), so that
    /// writing them drops none: metrics made after this count every drop those lines cause.
    public func makeRoom(for n: Int) {
        for sink in queued { sink.makeRoom(for: n) }
    }

    /// With `--field NAME`, when no result had that field: the fields results had instead (empty
    /// when there was no result at all). nil otherwise.
    public var missingFieldAlternatives: [String]? {
        guard case .field = selection else { return nil }
        return fieldSeen.withLock { $0.seen ? nil : $0.others.sorted() }
    }

    /// What became of the lines so far, per output (stdout first): the metrics' `output` section.
    public var statistics: [SinkStatistics] {
        (stdout.map { [$0.statistics(name: "stdout")] } ?? []) + queued.map(\.statistics)
    }

    /// Delivers what waits (each sink for at most its `drain=` seconds) and stops every queued sink. Lines
    /// written after it reach stdout only. Called again, it returns the first answer.
    /// - Returns: the final statistics of every output.
    public func finish() -> [SinkStatistics] {
        finished.withLock { done in
            if let done { return done }
            relay.disconnect()
            let now = HostClock.monotonicNs()
            let final = queued.map { $0.finish(deadlineNs: now + UInt64($0.drainSeconds * 1e9)) }
            done = (stdout.map { [$0.statistics(name: "stdout")] } ?? []) + final
            return done!
        }
    }

    private func finishNow() {
        relay.disconnect()
        queued.forEach { _ = $0.finish(deadlineNs: HostClock.monotonicNs()) }
    }
}

/// Passes a sink's connection news to the router's other sinks. Connected after the sinks exist
/// (their threads may report before the router is made: that news waits), cut at the end (no
/// reference cycle is left behind).
private final class StatusRelay: Sendable {
    private let state = Locked<(router: OutputRouter?, waiting: [(OutputLine, String)])>((nil, []))

    func connect(_ r: OutputRouter) {
        let waiting = state.withLock { s in
            s.router = r
            defer { s.waiting = [] }
            return s.waiting
        }
        for (line, name) in waiting { r.write(line, except: name) }
    }

    func disconnect() { state.withLock { $0 = (nil, []) } }

    func tell(_ line: OutputLine, except name: String) {
        let router = state.withLock { s in
            if s.router == nil { s.waiting.append((line, name)) }
            return s.router
        }
        router?.write(line, except: name)
    }
}
