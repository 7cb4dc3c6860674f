import CVHostCore

/// The inputs of a running run: those it started with, and those added, changed or removed while
/// it runs (InputChanges). Whatever looks at the inputs (the run's pace, the commands, the live
/// view, /metrics, /healthz) reads them here, as they are now. A name is reserved while its input
/// opens, so that two requests cannot add one name twice; the number of inputs is bounded
/// (`--max-inputs`), so that no client can exhaust the host.
///
/// `@unchecked Sendable`: its state is read and changed only with `lock` held.
final class RunInputs: @unchecked Sendable {
    private struct State {
        var sources: [SourceRun]
        /// Names of inputs being opened (or replaced), not yet in `sources`.
        var opening: Set<String> = []
        /// Inputs being removed: still in `sources` until their session has stopped.
        var removing: Set<String> = []
        /// The run is ending: nothing more is added.
        var closed = false
    }
    private var s: State
    /// Guards `s`; broadcast at each change, for a run that waits while an input is being added.
    private let lock = ConditionLock()
    /// The most inputs the run may have at once.
    let limit: Int

    init(_ sources: [SourceRun], limit: Int) {
        s = State(sources: sources)
        self.limit = limit
    }

    /// Reads or changes the state with the lock held, and wakes whoever waits for a change.
    private func state<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer {
            lock.broadcast()
            lock.unlock()
        }
        return body(&s)
    }

    /// The inputs now, in the order they were started or added.
    var all: [SourceRun] { state { $0.sources } }

    func named(_ id: String) -> SourceRun? { state { s in s.sources.first { $0.id == id } } }

    /// Holds `id` for an input about to be opened. `replacing`: the input of that name being changed.
    /// - Throws: conflict when the name is taken (or being opened), the input limit is reached, or the run is ending.
    func reserve(_ id: String, replacing: SourceRun?) throws(CommandRefusal) {
        lock.lock()
        defer { lock.unlock() }
        guard !s.closed else { throw CommandRefusal(.conflict, "the run is ending: no input can be added") }
        if s.opening.contains(id) || (replacing == nil && s.sources.contains { $0.id == id }) {
            throw CommandRefusal(.conflict, "an input is already called \(id): give another name, or change it (PUT /inputs/\(id))")
        }
        if replacing == nil && s.sources.count - s.removing.count + s.opening.count >= limit {
            throw CommandRefusal(.conflict, "this run has \(limit) inputs, its most (--max-inputs \(limit)): remove one first, or start cvhost with a higher --max-inputs")
        }
        s.opening.insert(id)
    }

    /// Adds an opened input under its reserved name (`replacing`'s place, if it replaces one).
    /// - Returns: false when the run ended meanwhile (the input is not added).
    func insert(_ source: SourceRun, replacing: SourceRun?) -> Bool {
        state { s in
            s.opening.remove(source.id)
            guard !s.closed else { return false }
            if let replacing, let at = s.sources.firstIndex(where: { $0 === replacing }) {
                s.sources[at] = source
            } else {
                s.sources.append(source)
            }
            return true
        }
    }

    /// Lets go of a name reserved for an input that could not be opened.
    func release(_ id: String) {
        state { _ = $0.opening.remove(id) }
    }

    /// Marks `source` as being removed. - Returns: false when it already is (or is gone).
    func beginRemoving(_ source: SourceRun) -> Bool {
        state { s in
            guard s.sources.contains(where: { $0 === source }), !s.removing.contains(source.id) else { return false }
            s.removing.insert(source.id)
            return true
        }
    }

    /// Drops a removed input (its session has stopped).
    func remove(_ source: SourceRun) {
        state { s in
            s.sources.removeAll { $0 === source }
            s.removing.remove(source.id)
        }
    }

    /// The run ends when no input runs and none is being added or changed: then nothing is added
    /// from now on. - Returns: true when it ended so (at once, so that no add slips in between).
    func closeWhenIdle() -> Bool {
        state { s in
            guard s.opening.isEmpty, s.sources.allSatisfy(\.isStopped) else { return false }
            s.closed = true
            return true
        }
    }

    /// Waits, while an input is being opened (and none runs), until it is added or let go, or the
    /// monotonic clock reaches `deadlineNs`: the run's wait for an add under way, without a poll.
    func waitWhileOpening(untilMonotonicNs deadlineNs: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        if !s.opening.isEmpty { lock.wait(untilMonotonicNs: deadlineNs) }
    }

    /// Waits until the inputs change (one added, removed or stopping) or the monotonic clock reaches
    /// `deadlineNs`: a run with no input that waits for some (a fleet's node).
    func waitForChange(untilMonotonicNs deadlineNs: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        lock.wait(untilMonotonicNs: deadlineNs)
    }

    /// The run is ending (a stop): no input is added from now on.
    func close() {
        state { $0.closed = true }
    }

    var isClosed: Bool { state { $0.closed } }
}
