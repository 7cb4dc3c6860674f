import CVHostCore
import CVHostLines
import Glibc
import Histogram

/// A broker output (`mqtt://`, `kafka://`, `nats://`): every line delivered at least once, in
/// order per input, by a thread of its own, through a `BrokerConnection`.
///
/// Delivery: lines wait in a bounded queue (`LineQueue`) and, with `spool=DIR`, on disk (`Spool`:
/// a thread of the sink's appends every line there as it comes, whatever the connection is doing,
/// and it stays until the broker has it, so it outlives an outage of any length that fits the
/// spool, and cvhost itself being stopped or killed; a line the spool's disk refuses, full or
/// failing, is sent from memory instead, counted as `unspooled`). Up to `window`
/// lines are in flight (`InflightWindow`); a line leaves the sink when the broker acknowledges it.
/// When the connection is lost, or the broker reports a delivery failed, the lines in flight are
/// sent again first, in their order, after a backoff (0.5 s doubling to 30 s): duplicates are
/// possible (at least once) and carry the same event id. Lines the broker may have are never dropped
/// for room: only lines no broker has seen are, so the count of drops is exactly the count of lines
/// lost. A broker that cannot be reached at start does not stop the run (unless required=true):
/// `output.disconnected`, then `output.connected`, go to the other sinks (`onStatus`). At the end,
/// what waits is delivered for up to the drain time; what is still undelivered then stays in the
/// spool for the next run (or, without one, is counted as unsent).
final class BrokerSink: LineQueueBacked, @unchecked Sendable {
    // @unchecked Sendable: the thread's own state (`window`, `connection`, `spool`) is touched
    // only by the sink's thread; what others read is behind `status`.
    let name: String
    let queue: LineQueue
    let queueSettings: OutputDestination.QueueSettings
    private let connect: () throws(OutputError) -> BrokerConnection
    private let thread = SinkThreadState()
    /// With a spool: the thread that writes it, and its wake-up for the sender (lines were spooled).
    private let spoolThread = SinkThreadState()
    /// Held while lines move from the queue into the spool (by its thread, or by a writer that found
    /// the queue full): one mover at a time, so the spool keeps the lines' order.
    private let spilling = SerialLock()
    private let spooledLines = WakePipe("an output's spool")
    /// Lines the spool's disk refused, sent from memory (in order: while any wait here, new lines
    /// join them rather than the spool). Full, the oldest is dropped, counted as write_failed.
    private let unspooled: LineQueue
    private let onStatus: @Sendable (_ connected: Bool, _ reason: String?, _ queued: Int) -> Void
    /// A required output (required=true) refused a line for good: told once, with why; the run ends (exit 5).
    private let onRefusedForGood: (@Sendable (String) -> Void)?
    private let refusedForGood = Locked(false)

    private struct Status {
        var connected: Bool?  // nil: not tried yet
        var failure: String?
        var delivered: UInt64 = 0
        var rejected: UInt64 = 0
        var unsent: UInt64 = 0
        var resent: UInt64 = 0
        var failed: UInt64 = 0
        /// Lines the spool's disk refused, sent from memory.
        var unspooled: UInt64 = 0
        /// Whether the lines left at the end were counted (by the thread, or by `finish` for a
        /// thread left behind): once, never twice.
        var leftCounted = false
        /// In flight, or to be sent again.
        var unacknowledged = 0
        /// From a line's making to its acknowledgement, µs.
        var latency = Histogram<UInt64>(highestTrackableValue: BrokerSink.longestMicros, numberOfSignificantValueDigits: .three)
    }
    /// Latencies are recorded up to an hour (a longer outage counts as an hour).
    static let longestMicros: UInt64 = 3_600_000_000
    private let status = ConditionLock()
    private var state = Status()

    // The thread's own.
    private var connection: BrokerConnection?
    private var window: InflightWindow
    private let spool: Spool?
    /// Whether `output.connected` was said for the connection's current state.
    private var reportedUp = false
    /// Why deliveries failed or lines were refused, as said on stderr: each distinct reason once a
    /// run, not once per line (bounded: a broker with a new reason each time cannot fill stderr).
    private var reasonsSaid = Set<String>()
    /// The next line's place in the order lines are taken (lines sent again keep theirs).
    private var nextOrder: UInt64 = 0

    /// - Parameters:
    ///   - window: lines in flight at most: enough to fill the round trip to the broker.
    ///   - connect: makes a connection (blocking: on the sink's thread).
    /// - Throws: `OutputError` when the spool folder cannot be used.
    init(name: String, queue settings: OutputDestination.QueueSettings, window: Int,
         connect: @escaping () throws(OutputError) -> BrokerConnection,
         onStatus: @escaping @Sendable (_ connected: Bool, _ reason: String?, _ queued: Int) -> Void,
         onRefusedForGood: (@Sendable (String) -> Void)? = nil) throws(OutputError) {
        self.name = name
        queueSettings = settings
        self.connect = connect
        self.onStatus = onStatus
        self.onRefusedForGood = onRefusedForGood
        self.window = InflightWindow(capacity: window)
        queue = LineQueue(capacity: settings.capacity)
        unspooled = LineQueue(capacity: settings.capacity)
        spool = try settings.spool.map { s throws(OutputError) in try Spool(folder: s.folder, maxBytes: s.maxBytes, name: name) }
        if let spool {
            SystemThread.start("cvhost-spool") { [self] in writeSpool(spool) }
        } else {
            spoolThread.markEnded()
        }
        SystemThread.start("cvhost-output") { [self] in run() }
    }

    var statistics: SinkStatistics {
        let s = status.withLock { state }
        var out = SinkStatistics(output: name)
        out.connected = s.connected ?? false
        out.delivered = s.delivered
        out.queued = queue.count + s.unacknowledged + (spool?.unread ?? 0) + unspooled.count
        out.spooled = spool?.lineCount
        out.spoolFolder = spool?.folder
        out.unspooled = spool == nil ? nil : s.unspooled
        out.resent = s.resent
        out.failed = s.failed
        out.latency = s.latency
        out.dropped = [.queueFull: queue.droppedFull, .rejected: s.rejected, .unsent: s.unsent,
                       .spoolFull: spool?.droppedFull ?? 0, .spoolDamaged: spool?.damaged ?? 0, .writeFailed: unspooled.droppedFull]
        return out
    }

    /// Waits for the first connection's outcome. - Returns: why it failed, or nil once connected.
    func firstConnection(untilNs deadline: UInt64) -> String? {
        status.withLock {
            while state.connected == nil {
                if !status.wait(untilMonotonicNs: deadline) { return "no answer from the broker" }
            }
            return state.connected == true ? nil : state.failure
        }
    }

    func finish(deadlineNs: UInt64) -> SinkStatistics {
        // The spool takes every line first (a disk, not a network: it does not wait for the deadline).
        spoolThread.requestFinish(deadlineNs: deadlineNs)
        queue.wake()
        _ = spoolThread.waitEnded(untilNs: deadlineNs + 1_000_000_000)
        thread.requestFinish(deadlineNs: deadlineNs)
        queue.wake()
        spooledLines.wake()
        // A connect that blocks (a host that does not answer) may outlast the deadline: then the
        // thread is left behind and what waits is counted as unsent (or stays in the spool).
        if !thread.waitEnded(untilNs: deadlineNs + 1_000_000_000) {
            let left = UInt64(queue.count + unspooled.count) + UInt64(status.withLock { state.unacknowledged })
            status.withLock {
                if !state.leftCounted { state.unsent += spool == nil ? left : UInt64(unspooled.count) }
                state.leftCounted = true
            }
        }
        return statistics
    }

    // MARK: - The spool's thread

    /// A line for the broker. With a spool, none is dropped from memory for want of room: a writer
    /// that finds the queue full moves what waits into the spool itself, as the spool's thread
    /// would (a starved thread on a loaded machine let 2,980 lines of a 1,000-line queue go): the
    /// writer waits for a disk write rather than lose lines.
    public func write(_ line: OutputLine) {
        guard let spool else { return queue.push(line) }
        while !queue.pushIfRoom(line) { moveToSpool(spool) }
    }

    /// Room for `n` lines: with a spool, what waits moves into it; without, the oldest are dropped (counted).
    public func makeRoom(for n: Int) {
        guard let spool else { return queue.makeRoom(for: n) }
        if queue.count + n > queue.capacity { moveToSpool(spool) }
    }

    /// Appends every line of the queue to the spool as it comes, and tells the sender.
    private func writeSpool(_ spool: Spool) {
        defer { spoolThread.markEnded() }
        var fd = pollfd(fd: queue.wakeDescriptor, events: Int16(POLLIN), revents: 0)
        while true {
            queue.clearWake()
            moveToSpool(spool)
            // Finishing: the run writes no more lines.
            if spoolThread.finishDeadline != nil && queue.count == 0 { return }
            _ = poll(&fd, 1, 1000)
        }
    }

    /// Moves the queue's lines into the spool (those its disk refuses wait in memory), and tells the sender.
    private func moveToSpool(_ spool: Spool) {
        spilling.run {
            let lines = queue.popFront(max: Int.max)
            guard !lines.isEmpty else { return }
            let wasFull = spool.isFull
            // Lines already waiting in memory go first: the new ones join them.
            let refused = unspooled.count > 0 ? lines : spoolOrRefuse(lines, spool)
            for line in refused { unspooled.push(line) }
            if !refused.isEmpty { status.withLock { state.unspooled += UInt64(refused.count) } }
            if spool.isFull && !wasFull {
                Log.warning("the spool \(spool.folder) is full (\(spool.maxBytes / 1_048_576) MB): new lines are dropped (counted as spool_full) until the broker takes what it holds",
                            source: name)
            }
            spooledLines.wake()
        }
    }

    /// Appends lines to the spool. - Returns: those its disk refused (said once a run).
    private func spoolOrRefuse(_ lines: [OutputLine], _ spool: Spool) -> [OutputLine] {
        let (refused, why) = spool.append(lines)
        if let why, !refused.isEmpty, status.withLock({ state.unspooled == 0 }) {
            Log.warning("the disk under the spool \(spool.folder) refused lines (\(why)): they are sent from memory while it does (counted as unspooled; "
                        + "lost if cvhost stops before the broker has them)", source: name)
        }
        return refused
    }

    // MARK: - The sender's thread

    /// What wakes the sender besides its connection: lines in the queue, or in the spool.
    private var linesArrive: Int32 { spool == nil ? queue.wakeDescriptor : spooledLines.descriptor }

    private func clearArrivals() {
        if spool == nil { queue.clearWake() } else { spooledLines.clear() }
    }

    private var nothingWaits: Bool { queue.count == 0 && window.isEmpty && (spool?.unread ?? 0) == 0 && unspooled.count == 0 }

    private func run() {
        defer { thread.markEnded() }
        var backoff = ReconnectBackoff()
        while true {
            let deadline = thread.finishDeadline
            if let deadline, nothingWaits || HostClock.monotonicNs() >= deadline { break }
            let c: BrokerConnection
            if let open = connection {
                c = open
            } else {
                do {
                    c = try connect()
                } catch {
                    let wait = backoff.failed()
                    lost(error.message, retryInNs: wait)
                    sleep(ns: wait)
                    continue
                }
                connection = c
                reportedUp = false
            }
            if let problem = pump(c, until: deadline) {
                // In-flight lines are sent again first, in order, on the next connection.
                window.connectionLost()
                connection = nil
                let wait = backoff.failed()
                lost(problem, retryInNs: wait)
                sleep(ns: wait)
            } else if c.isUp != reportedUp {
                reportedUp = c.isUp
                if c.isUp {
                    backoff.connected()
                    c.cameUp()
                    reportConnected()
                } else {
                    lost(c.downReason ?? "no broker of the cluster answers", retryInNs: nil)
                }
            }
        }
        if let c = connection {
            c.close(untilNs: HostClock.monotonicNs() + 1_000_000_000)
            settle(c.takeSettled())
        }
        connection = nil
        // What is left in the spool stays there, for the next run: not lost. The rest is.
        spool?.flush()
        let inWindow = window.abandon()
        let left = spool == nil ? queue.popFront(max: Int.max).count + inWindow.all : unspooled.popFront(max: Int.max).count + inWindow.notSpooled
        status.withLock {
            if !state.leftCounted { state.unsent += UInt64(left) }
            state.leftCounted = true
        }
        status.withLock { state.unacknowledged = 0 }
    }

    /// One turn on a connection: publish what fits the window, wait for the connection or the
    /// queue (at most 1 s, for keep-alive), let the connection work. - Returns: why the
    /// connection ended, or nil.
    private func pump(_ c: BrokerConnection, until deadline: UInt64?) -> String? {
        if c.canPublish { publishWaiting(c) }
        var fds = [pollfd(fd: c.descriptor, events: Int16(POLLIN) | (c.wantsWrite ? Int16(POLLOUT) : 0), revents: 0),
                   pollfd(fd: linesArrive, events: Int16(POLLIN), revents: 0)]
        var timeoutMs: Int32 = 1000
        if let deadline {
            let now = HostClock.monotonicNs()
            timeoutMs = deadline > now ? Int32(min(1000, (deadline - now) / 1_000_000 + 1)) : 0
        }
        _ = poll(&fds, 2, timeoutMs)
        if fds[1].revents != 0 { clearArrivals() }
        let problem = c.service(readable: fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0,
                                writable: fds[0].revents & Int16(POLLOUT) != 0)
        settle(c.takeSettled())
        return problem
    }

    /// The next lines to publish: from the spool, or from memory without one.
    private func take(max: Int) -> [PendingLine] {
        guard max > 0 else { return [] }
        var lines: [(line: OutputLine, position: Spool.Position?)] =
            spool.map { $0.read(max: max).map { ($0.line, $0.position) } } ?? queue.popFront(max: max).map { ($0, nil) }
        // Lines the disk refused come after every line spooled before them.
        if let spool, lines.count < max, spool.unread == 0 {
            lines += unspooled.popFront(max: max - lines.count).map { ($0, nil) }
        }
        let recovered = UInt64(spool?.recovered ?? 0)
        defer { nextOrder += UInt64(lines.count) }
        return lines.enumerated().map { i, l in
            // A line an earlier run left in the spool was (very likely) sent by it.
            PendingLine(line: l.line, order: nextOrder + UInt64(i), position: l.position, sentBefore: (l.position?.ordinal ?? .max) < recovered)
        }
    }

    /// Publishes waiting lines (those to send again first) until the window is full.
    private func publishWaiting(_ c: BrokerConnection) {
        let room = window.room  // before the resend list is taken: it counts those lines
        var lines = (window.takeResend() + take(max: room))[...]
        var resent: UInt64 = 0
        var rejected = false
        publishing: while let pending = lines.first {
            switch c.publish(pending.line) {
            case .published(let id):
                if pending.sentBefore { resent += 1 }
                window.published(pending, id: id)
            case .refused(let why):
                rejected = true
                status.withLock { state.rejected += 1 }
                say(why, "a \(pending.line.route.event) line of \(pending.line.bytes.count) bytes was refused (\(why)): dropped (counted as rejected)")
                refused(why)
            case .notNow:
                break publishing
            }
            lines = lines.dropFirst()
        }
        window.notPublished(Array(lines))
        status.withLock {
            state.unacknowledged = window.unacknowledged
            state.resent += resent
        }
        // Lines published wait for their acknowledgement; a rejected one is done with.
        if rejected || window.isEmpty { advanceSpool() }
    }

    /// Lines the broker acknowledged leave the sink; lines it could not take are sent again.
    private func settle(_ settled: SettledLines) {
        guard !settled.acknowledged.isEmpty || !settled.failed.isEmpty || !settled.refused.isEmpty else { return }
        for why in settled.failures {
            say(why, "the broker did not take lines (\(why)): "
                + (settled.refused.isEmpty ? "they are sent again" : "those it refused for good are dropped (counted as rejected), others sent again"))
        }
        if !settled.refused.isEmpty { refused(settled.failures.first ?? "refused by the broker") }
        let done = window.acknowledge(settled.acknowledged)
        let bad = window.failed(settled.failed)
        // Refused for good: out of the window (as delivered lines are), never sent again.
        let refused = window.acknowledge(settled.refused).count
        let now = HostClock.monotonicNs()
        status.withLock {
            for p in done where p.line.createdNs > 0 && p.line.createdNs <= now {
                _ = state.latency.record(min((now - p.line.createdNs) / 1000, BrokerSink.longestMicros))
            }
            state.delivered += UInt64(done.count)
            state.failed += UInt64(bad)
            state.rejected += UInt64(refused)
            state.unacknowledged = window.unacknowledged
        }
        advanceSpool()
    }

    /// The spool forgets what is delivered: everything before the first line still in the window,
    /// or everything read when the window is empty.
    private func advanceSpool() {
        guard let spool else { return }
        spool.delivered(upTo: window.firstUndelivered ?? spool.readPosition)
    }

    /// A line was refused for good: a required output ends the run (told once).
    private func refused(_ why: String) {
        guard let tell = onRefusedForGood, refusedForGood.withLock({ was in defer { was = true }; return !was }) else { return }
        tell(why)
    }

    /// Says `message` on stderr the first time `reason` is seen in this run (a reason is the
    /// broker's or its client's words alone, so that one cause is said once however it shows).
    private func say(_ reason: String, _ message: String) {
        guard reasonsSaid.count < 100, reasonsSaid.insert(reason).inserted else { return }
        Log.warning(message, source: name)
    }

    private func reportConnected() {
        let wasKnown = status.withLock {
            let known = state.connected != nil
            state.connected = true
            state.failure = nil
            status.broadcast()
            return known
        }
        Log.info(wasKnown ? "connected again" : "connected", source: name)
        onStatus(true, nil, queue.count + (spool?.unread ?? 0))
    }

    /// The connection failed or was lost: said once per outage (on stderr and to the other sinks).
    private func lost(_ reason: String, retryInNs: UInt64?) {
        let wasConnected = status.withLock {
            let was = state.connected
            state.connected = false
            state.failure = reason
            status.broadcast()
            return was
        }
        let retry = retryInNs.map { "retrying in \(JSONObject.number(Double($0) / 1e9, decimals: 1)) s" } ?? "retrying"
        if wasConnected == false {
            Log.debug("\(reason); \(retry)", source: name)
            return
        }
        let keep = spool.map { "lines wait in the spool \($0.folder) (at most \($0.maxBytes / 1_048_576) MB)" }
            ?? "lines wait in the queue (at most \(queueSettings.capacity))"
        Log.warning("\(wasConnected == nil ? "cannot connect" : "disconnected"): \(reason); \(retry), \(keep)", source: name)
        onStatus(false, reason, queue.count + (spool?.unread ?? 0))
    }

    /// Sleeps for a backoff, or less when finishing (until the finish deadline).
    private func sleep(ns: UInt64) {
        let until = HostClock.monotonicNs() + ns
        var fd = pollfd(fd: linesArrive, events: Int16(POLLIN), revents: 0)
        while true {
            let now = HostClock.monotonicNs()
            let finishing = thread.finishDeadline
            let end = min(until, finishing ?? until)
            if now >= end || (finishing != nil && nothingWaits) { return }
            if poll(&fd, 1, Int32((end - now) / 1_000_000 + 1)) > 0 { clearArrivals() }
        }
    }
}
