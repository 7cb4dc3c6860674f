@testable import CVHostPlugins
import Testing

/// The parts of a worker's life that need no worker: what each failure is called in
/// `plugin.crashed`, which ones cvhost must kill, and the backoff before a restart.
@Suite("Worker supervisor: failures and backoff")
struct WorkerSupervisorTests {
    @Test("each failure's reason, as plugin.crashed says it")
    func reasons() {
        #expect(WorkerFailure.closed.reason(.signaled(11)) == "signal")
        #expect(WorkerFailure.closed.reason(.exited(0)) == "exit")
        #expect(WorkerFailure.timeout.reason(.signaled(9)) == "timeout")
        #expect(WorkerFailure.memory(1 << 30).reason(.signaled(9)) == "memory")
        #expect(WorkerFailure.protocolError.reason(.signaled(9)) == "protocol")
        #expect(WorkerFailure.startFailed.reason(nil) == "start_failed")
    }

    @Test("a worker that is still running (hung, too big, off protocol) is killed; one that closed or never started is not")
    func kills() {
        #expect(WorkerFailure.timeout.needsKill && WorkerFailure.memory(1).needsKill && WorkerFailure.protocolError.needsKill)
        #expect(!WorkerFailure.closed.needsKill && !WorkerFailure.startFailed.needsKill)
    }

    @Test("the backoff before a restart: 0.1 s doubling with each recent failure, at most 10 s")
    func backoff() {
        let waits = (1...10).map { RestartPolicy.backoffNs(failuresInWindow: $0) }
        #expect(waits == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10, 10, 10].map { UInt64(($0 * 1e9).rounded()) })
    }

    @Test("restarts with a growing backoff; the fifth failure within a minute quarantines the worker")
    func quarantine() {
        var p = RestartPolicy()
        let s: UInt64 = 1_000_000_000
        #expect(p.failed(atNs: 10 * s) == .restart(atNs: 10 * s + 100_000_000))
        #expect(p.failed(atNs: 11 * s) == .restart(atNs: 11 * s + 200_000_000))
        #expect(p.failed(atNs: 12 * s) == .restart(atNs: 12 * s + 400_000_000))
        #expect(p.failed(atNs: 13 * s) == .restart(atNs: 13 * s + 800_000_000))
        #expect(p.failed(atNs: 69 * s) == .quarantine(failures: 5))
    }

    @Test("failures further apart than the window never quarantine, and the backoff starts again from 0.1 s")
    func forgets() {
        var p = RestartPolicy()
        let s: UInt64 = 1_000_000_000
        for i: UInt64 in 0..<20 {
            #expect(p.failed(atNs: i * 61 * s) == .restart(atNs: i * 61 * s + 100_000_000), "failure \(i)")
        }
        // Four in a minute, then a pause: the window holds only the recent ones.
        for i: UInt64 in 0..<4 { _ = p.failed(atNs: 2000 * s + i * s) }
        #expect(p.recentFailures.count == 4)
        #expect(p.failed(atNs: 2100 * s) == .restart(atNs: 2100 * s + 100_000_000))
    }
}
