import CVHostCore
import CVHostLines
import Dispatch

/// Writes the run's events into the event store on a queue of its own, a batch a transaction, so
/// that neither the disk nor SQLite ever holds back a line's writer. A tap of the outputs: it sees
/// every line, keeps only the events the store keeps, and at most `mostWaiting` wait (more are
/// dropped, counted and said once: a store that cannot keep up never grows memory).
public final class EventRecorder: OutputSink, @unchecked Sendable {
    // @unchecked Sendable: its timer is set up once, here, and only cancelled after.
    public let store: EventStore
    private let queue = DispatchQueue(label: "cvhost.events")
    private let pending = Locked<(lines: [OutputLine], scheduled: Bool, dropped: Int, failed: Int)>(([], false, 0, 0))
    private let said = Locked<Set<String>>([])
    private let pruner: DispatchSourceTimer
    static let mostWaiting = 10_000

    public init(store: EventStore) {
        self.store = store
        pruner = DispatchSource.makeTimerSource(queue: queue)
        pruner.schedule(deadline: .now() + 3600, repeating: 3600)
        pruner.setEventHandler { [store] in store.prune() }
        pruner.resume()
    }

    deinit { pruner.cancel() }

    public func write(_ line: OutputLine) {
        guard StoredEvent.kept.contains(line.route.event) else { return }
        // Whether to start a drain, and whether this is the first event dropped (said once), in one look.
        let (schedule, firstDropped) = pending.withLock { p -> (Bool, Bool) in
            guard p.lines.count < Self.mostWaiting else {
                p.dropped += 1
                return (false, p.dropped == 1)
            }
            p.lines.append(line)
            defer { p.scheduled = true }
            return (!p.scheduled, false)
        }
        if schedule { queue.async { [self] in drain() } }
        if firstDropped { once("the event store \(store.path) falls behind: events are dropped (counted at the end)") }
    }

    private func drain() {
        let batch = pending.withLock { p -> [OutputLine] in
            defer {
                p.lines = []
                p.scheduled = false
            }
            return p.lines
        }
        do {
            try store.record(batch)
        } catch {
            pending.withLock { $0.failed += batch.count }
            once("the event store \(store.path) refused events: \(error) (the run goes on; said once)")
        }
    }

    private func once(_ message: String) {
        guard said.withLock({ $0.insert(message).inserted }) else { return }
        Log.warning(message)
    }

    /// Writes what waits. - Returns: events dropped (the store behind) and refused (its errors).
    @discardableResult
    public func finish() -> (dropped: Int, failed: Int) {
        queue.sync { drain() }
        return pending.withLock { ($0.dropped, $0.failed) }
    }
}
