import CVHostTestSupport
import Foundation
import Glibc
import Testing

/// One stop is one stop: a signal repeated within a second of the first (GNU timeout sends it to
/// cvhost and then to its process group) ends the run cleanly, with its final lines; a second
/// one later exits at once. The race is not hit on every run, so each is tried many times.
@Suite("stop signals")
struct StopSignalTests {
    /// Whether a run's output ends as a clean stop does: final metrics, then session.stopped.
    static func endedCleanly(_ r: CommandResult) -> Bool {
        r.events("metrics").last?["final"] as? Bool == true && r.events.last?["event"] as? String == "session.stopped"
            && !r.stderr.contains("exiting without final metrics")
    }

    @Test("timeout N cvhost run ...: every run ends with its final lines (12 runs, 4 at a time)")
    func underTimeout() throws {
        let results = Box<[CommandResult]>([])
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<3 {
                // timeout runs cvhost itself: its signal goes to cvhost, then to cvhost's group. Started
                // with no signal blocked, as from a shell (the test runner's threads block SIGTERM,
                // which would merge the two signals into one and hide the race).
                let unblocked = ["python3", "-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execvp(sys.argv[1], sys.argv[1:])"]
                guard let r = try? CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc:320x240@30"], timeout: 30,
                                                    under: unblocked + ["timeout", "--preserve-status", "2"], withStdin: false, onRunning: nil)
                else { continue }
                lock.withLock { results.value.append(r) }
            }
        }
        let all = lock.withLock { results.value }
        #expect(all.count == 12)
        for r in all {
            #expect(r.exitCode == 0 && Self.endedCleanly(r), "exit \(r.exitCode): \(r.stderr)")
        }
    }

    @Test("two SIGTERMs back to back: the same stop (20 runs); a second one more than a second later exits at once with 130")
    func backToBack() throws {
        for _ in 0..<20 {
            let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc:320x240@30"], timeout: 30, withStdin: false) { running in
                #expect(running.wait { $0.contains("session.started") })
                kill(running.pid, SIGTERM)
                kill(running.pid, SIGTERM)
            }
            #expect(r.exitCode == 0 && Self.endedCleanly(r), "exit \(r.exitCode): \(r.stderr)")
        }
        // A stop held by a plugin that takes a while (null's cost: longer than a stop waits for a
        // call, HungPluginStop's 5 s, so that the stop is still held however slow the machine is),
        // then a second request more than a second after the first.
        let r = try CVHostBinary.run(["run", "--plugin", "null:delay_ms=30000", "--input", "testsrc:320x240@30", "--backpressure", "block"],
                                     timeout: 30, withStdin: false) { running in
            #expect(running.wait { $0.contains("session.started") })
            kill(running.pid, SIGTERM)
            usleep(1_300_000)
            kill(running.pid, SIGTERM)
        }
        #expect(r.stderr.contains("stopping (signal again to exit at once)"), "\(r.stderr)")
        #expect(r.exitCode == 130 && r.stderr.contains("exiting without final metrics"), "exit \(r.exitCode): \(r.stderr)")
    }
}
