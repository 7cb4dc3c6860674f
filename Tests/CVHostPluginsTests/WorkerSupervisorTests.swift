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
        let waits = (1...10).map { WorkerSupervisor.backoffNs(failuresInWindow: $0) }
        #expect(waits == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10, 10, 10].map { UInt64(($0 * 1e9).rounded()) })
    }
}
