import CMosquitto
import CVHostCore
import Foundation
import Glibc

/// `--output mqtt://…`: every line published to the broker, at least once (QoS 1 by default),
/// in order per topic (`MQTTTopics`), by a thread of its own.
///
/// Delivery: lines wait in a bounded queue (`LineQueue`); up to `window` are in flight; a line
/// leaves the sink when the broker acknowledges it. When the connection is lost, the lines in
/// flight are sent again first, in their order, on a new connection made after a backoff (0.5 s
/// doubling to 30 s), so a broker restart loses nothing while the queue holds (duplicates are
/// possible: at least once). They are kept apart from the queue and never dropped for room:
/// the broker may have them already, so only lines no broker has seen are ever dropped, and the
/// count of drops is exactly the count of lines lost. A broker that cannot be reached at start does not
/// stop the run (unless required=true): `output.disconnected`, then `output.connected`, go to the
/// other sinks (`onStatus`). At the end, what waits is delivered for up to the drain time.
///
/// The status topic says `online` (retained) once connected; the connection's last will says
/// `offline` (retained) when cvhost dies, and cvhost says it itself when it stops.
final class MQTTSink: LineQueueBacked, @unchecked Sendable {
    // @unchecked Sendable: the thread's own state (`window`, `connection`, `topics`) is touched
    // only by the sink's thread; what others read is behind `status`.
    let name: String
    private let settings: OutputDestination.MQTTSettings
    let queue: LineQueue
    private let thread = SinkThreadState()
    private let onStatus: @Sendable (_ connected: Bool, _ reason: String?, _ queued: Int) -> Void
    private let clientID: String

    /// In-flight publications at most: enough to fill a loopback or LAN round trip.
    static let windowSize = 100

    private struct Status {
        var connected: Bool?  // nil: not tried yet
        var failure: String?
        var delivered: UInt64 = 0
        var rejected: UInt64 = 0
        var unsent: UInt64 = 0
        /// In flight, or to be sent again.
        var unacknowledged = 0
    }
    private let status = ConditionLock()
    private var state = Status()

    // The thread's own.
    private var topics: MQTTTopics
    private var connection: MQTTConnection?
    private var window = InflightWindow(capacity: MQTTSink.windowSize)

    init(_ settings: OutputDestination.MQTTSettings, name: String,
         onStatus: @escaping @Sendable (_ connected: Bool, _ reason: String?, _ queued: Int) -> Void) {
        self.settings = settings
        self.name = name
        self.onStatus = onStatus
        queue = LineQueue(capacity: settings.queue.capacity)
        topics = MQTTTopics(prefix: settings.prefix, host: Producer.host)
        // Unique per run: two cvhost processes never take over each other's connection.
        clientID = "cvhost-\(Producer.host.prefix(40))-\(Producer.session.prefix(8))"
        SystemThread.start("cvhost-output-mqtt") { [self] in run() }
    }

    var queueSettings: OutputDestination.QueueSettings { settings.queue }

    var statistics: SinkStatistics {
        let s = status.withLock { state }
        var out = SinkStatistics(output: name)
        out.connected = s.connected ?? false
        out.delivered = s.delivered
        out.queued = queue.count + s.unacknowledged
        out.dropped = [.queueFull: queue.droppedFull, .rejected: s.rejected, .unsent: s.unsent]
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
        thread.requestFinish(deadlineNs: deadlineNs)
        queue.wake()
        // A connect() that blocks (a host that does not answer) may outlast the deadline: then
        // the thread is left behind and what waits is counted as unsent.
        if !thread.waitEnded(untilNs: deadlineNs + 1_000_000_000) {
            let left = UInt64(queue.count) + UInt64(status.withLock { state.unacknowledged })
            status.withLock { state.unsent = left }
        }
        return statistics
    }

    // MARK: - The sink's thread

    private func run() {
        defer { thread.markEnded() }
        var backoff = ReconnectBackoff()
        while true {
            let deadline = thread.finishDeadline
            if let deadline, (queue.count == 0 && window.isEmpty) || HostClock.monotonicNs() >= deadline { break }
            let c: MQTTConnection
            if let open = connection {
                c = open
            } else {
                do {
                    c = try MQTTConnection(.init(settings: settings, clientID: clientID, willTopic: topics.status,
                                                 window: Int32(MQTTSink.windowSize)))
                } catch {
                    let wait = backoff.failed()
                    lost(error.reason, retryInNs: wait)
                    sleep(ns: wait)
                    continue
                }
                connection = c
            }
            if let problem = pump(c, until: deadline) {
                // In-flight lines are sent again first, in order, on the next connection.
                window.connectionLost()
                connection = nil
                let wait = backoff.failed()
                lost(problem, retryInNs: wait)
                sleep(ns: wait)
            } else if c.accepted && status.withLock({ state.connected }) != true {
                backoff.connected()
                _ = c.publish(topic: topics.status, payload: Array("online".utf8)[...], qos: 1, retain: true)
                reportConnected()
            }
        }
        if let c = connection, c.accepted {
            // Stopping, not dying: say so (the will is for dying), then leave.
            _ = c.publish(topic: topics.status, payload: Array("offline".utf8)[...], qos: 1, retain: true)
            let until = HostClock.monotonicNs() + 1_000_000_000
            while c.wantsWrite && HostClock.monotonicNs() < until && pump(c, until: until) == nil {}
            c.disconnect()
        }
        connection = nil
        let left = UInt64(queue.popFront(max: Int.max).count + window.abandon())
        status.withLock {
            state.unsent += left
            state.unacknowledged = 0
        }
    }

    /// One turn on a connection: publish what fits the window, wait for the socket or the queue
    /// (at most 1 s, for keep-alive), read and write. - Returns: why the connection ended, or nil.
    private func pump(_ c: MQTTConnection, until deadline: UInt64?) -> String? {
        if c.accepted { publishWaiting(c) }
        var fds = [pollfd(fd: c.socket, events: Int16(POLLIN) | (c.wantsWrite ? Int16(POLLOUT) : 0), revents: 0),
                   pollfd(fd: queue.wakeDescriptor, events: Int16(POLLIN), revents: 0)]
        var timeoutMs: Int32 = 1000
        if let deadline {
            let now = HostClock.monotonicNs()
            timeoutMs = deadline > now ? Int32(min(1000, (deadline - now) / 1_000_000 + 1)) : 0
        }
        _ = poll(&fds, 2, timeoutMs)
        if fds[1].revents != 0 { queue.clearWake() }
        var rc = MOSQ_ERR_SUCCESS.rawValue
        if fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { rc = c.read() }
        if rc == MOSQ_ERR_SUCCESS.rawValue && c.wantsWrite && fds[0].revents & Int16(POLLOUT) != 0 { rc = c.write() }
        if rc == MOSQ_ERR_SUCCESS.rawValue { rc = c.misc() }
        settle(c.takeAcknowledged())
        if let refusal = c.refusal { return "the broker refused the connection: \(refusal)" }
        if rc != MOSQ_ERR_SUCCESS.rawValue { return MQTTConnection.describe(rc, tls: settings.tls) }
        return nil
    }

    /// Publishes waiting lines (those to send again first) until the window is full.
    private func publishWaiting(_ c: MQTTConnection) {
        let room = window.room
        var lines = (window.takeResend() + queue.popFront(max: room))[...]
        while let line = lines.first {
            // The payload is the line without its newline: a subscriber prints it as stdout would.
            let (rc, mid) = c.publish(topic: topics.topic(for: line.route), payload: line.bytes.dropLast(), qos: settings.qos)
            if rc == MOSQ_ERR_SUCCESS.rawValue {
                window.published(line, mid: mid)
            } else if rc == MOSQ_ERR_PAYLOAD_SIZE.rawValue || rc == MOSQ_ERR_OVERSIZE_PACKET.rawValue {
                let first = status.withLock {
                    state.rejected += 1
                    return state.rejected == 1
                }
                if first { Log.warning("a \(line.route.event) line of \(line.bytes.count) bytes is larger than the broker takes: dropped (counted as rejected)", source: name) }
            } else {
                break  // the connection is going: the next pump says why
            }
            lines = lines.dropFirst()
        }
        window.notPublished(Array(lines))
        status.withLock { state.unacknowledged = window.unacknowledged }
    }

    /// Lines the broker acknowledged leave the sink.
    private func settle(_ acknowledged: [Int32]) {
        guard !acknowledged.isEmpty else { return }
        let done = window.acknowledge(acknowledged)
        status.withLock {
            state.delivered += UInt64(done)
            state.unacknowledged = window.unacknowledged
        }
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
        onStatus(true, nil, queue.count)
    }

    /// The connection failed or was lost: said once per outage (on stderr and to the other sinks).
    private func lost(_ reason: String, retryInNs: UInt64) {
        let wasConnected = status.withLock {
            let was = state.connected
            state.connected = false
            state.failure = reason
            status.broadcast()
            return was
        }
        let retry = "retrying in \(JSONObject.number(Double(retryInNs) / 1e9, decimals: 1)) s"
        if wasConnected == false {
            Log.debug("\(reason); \(retry)", source: name)
            return
        }
        Log.warning("\(wasConnected == nil ? "cannot connect" : "disconnected"): \(reason); \(retry), lines wait in the queue (at most \(settings.queue.capacity))",
                    source: name)
        onStatus(false, reason, queue.count)
    }

    /// Sleeps for a backoff, or less when finishing (until the finish deadline).
    private func sleep(ns: UInt64) {
        let until = HostClock.monotonicNs() + ns
        var fd = pollfd(fd: queue.wakeDescriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let now = HostClock.monotonicNs()
            let finishing = thread.finishDeadline
            let end = min(until, finishing ?? until)
            if now >= end || (finishing != nil && queue.count == 0) { return }
            if poll(&fd, 1, Int32((end - now) / 1_000_000 + 1)) > 0 { queue.clearWake() }
        }
    }
}
