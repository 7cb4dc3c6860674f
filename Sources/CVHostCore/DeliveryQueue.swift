import Foundation

/// A bounded queue of frames for one output, drained by that output's own worker thread(s).
///
/// With one worker, frames reach the consumer one at a time, in order. With several, each
/// worker takes the next frame; tickets (dequeue order) let the consumer restore order.
/// The producer (the session's capture thread) never waits in drop-late mode; in block mode
/// it waits for room.
final class DeliveryQueue: @unchecked Sendable {
    // @unchecked Sendable: every mutable field below is read and written with `cond` held.
    typealias Handler = @Sendable (SampleBuffer, DeliveryContext) -> Void
    typealias DropHandler = @Sendable (SampleBuffer, DropReason) -> Void
    typealias FinishHandler = @Sendable (_ worker: Int) -> Void

    let label: String
    let capacity: Int
    let policy: BackpressurePolicy
    let workerCount: Int

    private let cond = ConditionLock()
    // Slots before `head` are taken and set to nil at once, so no frame is kept alive longer than needed.
    private var waiting: [SampleBuffer?] = []
    private var head = 0  // index of the oldest waiting frame in `waiting`
    private var finished = false
    private var nextTicket: UInt64 = 0
    private var workersRunning = 0
    private var deepest = 0

    private let handler: Handler
    private let onDrop: DropHandler
    private let onFinish: FinishHandler

    init(label: String, capacity: Int, policy: BackpressurePolicy, workerCount: Int,
         handler: @escaping Handler, onDrop: @escaping DropHandler, onFinish: @escaping FinishHandler) {
        precondition(capacity >= 1 && workerCount >= 1)
        self.label = label
        self.capacity = capacity
        self.policy = policy
        self.workerCount = workerCount
        self.handler = handler
        self.onDrop = onDrop
        self.onFinish = onFinish
    }

    /// Starts the worker threads.
    func start() {
        cond.withLock { workersRunning = workerCount }
        for worker in 0..<workerCount {
            SystemThread.start(workerCount == 1 ? label : "\(label)#\(worker)") { [self] in run(worker: worker) }
        }
    }

    /// Frames waiting now (not counting those being processed).
    var depth: Int { cond.withLock { waiting.count - head } }

    /// The most frames that ever waited at once.
    var maxDepth: Int { cond.withLock { deepest } }

    /// Offers a frame. In drop-late mode a full queue drops its oldest waiting frame; in block
    /// mode this waits until a worker makes room.
    func enqueue(_ sample: SampleBuffer) {
        var dropped: SampleBuffer?
        cond.lock()
        precondition(!finished, "enqueue after finish")
        if waiting.count - head >= capacity {
            switch policy {
            case .dropLate:
                dropped = waiting[head]
                waiting[head] = nil
                head += 1
            case .block:
                while waiting.count - head >= capacity { cond.wait() }
            }
        }
        if head > 64 && head * 2 > waiting.count {
            waiting.removeFirst(head)
            head = 0
        }
        waiting.append(sample)
        deepest = max(deepest, waiting.count - head)
        cond.broadcast()
        cond.unlock()
        // Outside the lock: the drop handler may take its own locks (metrics).
        if let dropped { onDrop(dropped, .late) }
    }

    /// Tells the workers no more frames come, lets them drain what waits, and returns when
    /// every worker has run its finish handler and exited.
    func finish() {
        cond.lock()
        finished = true
        cond.broadcast()
        while workersRunning > 0 { cond.wait() }
        cond.unlock()
    }

    private func run(worker: Int) {
        cond.lock()
        while true {
            while waiting.count == head && !finished { cond.wait() }
            if waiting.count == head { break }  // finished and drained
            let sample = waiting[head]!
            waiting[head] = nil
            head += 1
            let context = DeliveryContext(worker: worker, ticket: nextTicket)
            nextTicket += 1
            cond.broadcast()  // room for a blocked producer
            cond.unlock()
            handler(sample, context)
            cond.lock()
        }
        cond.unlock()
        onFinish(worker)
        cond.withLock {
            workersRunning -= 1
            cond.broadcast()
        }
    }
}
