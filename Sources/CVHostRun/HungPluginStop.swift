import CPluginGuard
import CVHostCore
import CVHostOutput
import CVHostPlugins
import Foundation
import Glibc
import Synchronization

/// A stop completes even when a plugin hangs. Once a stop is under way (a signal, --duration,
/// --max-frames, the end of the input), cvhost waits for the plugins to finish the frames they
/// were given, but no single call into a plugin may keep it waiting more than `graceSeconds`:
/// then the run ends without it. The inputs still running write their final metrics (the hung
/// call named in `hung`) and their session.stopped, the hung plugins are named on stderr, and
/// cvhost exits with code 20 at once (a hung call cannot be taken back from its thread; its
/// instance is never destroyed). The same bound holds for destroy() after the last lines.
enum HungPluginStop {
    static let graceSeconds = 5.0

    /// Since when a stop is under way for the inputs still running (monotonic ns); nil: none is.
    static func stoppingSince(_ sources: [SourceRun], stop: RunStop) -> UInt64? {
        let running = sources.filter { !$0.isStopped }
        guard !running.isEmpty else { return nil }
        return ([stop.requested?.atNs] + running.map { $0.session.draining?.sinceNs }).compactMap { $0 }.min()
    }

    /// The calls that have kept the stop waiting `graceSeconds` or more: their plugin and input.
    static func hung(_ sources: [SourceRun], stoppingSince since: UInt64, now: UInt64) -> [(SourceRun, PluginRunner, PluginCall)] {
        sources.filter { !$0.isStopped }.flatMap { source in
            // A plugin in a worker process is killed by its own watchdog (timeout_ms): not waited on here.
            source.runners.filter { !$0.isIsolated }.compactMap { runner in
                runner.hungCall(now: now).flatMap { call in
                    Double(now - max(call.sinceNs, since)) / 1e9 >= graceSeconds ? (source, runner, call) : nil
                }
            }
        }
    }

    /// Writes the final lines of every input still running, names the hung calls, and exits 20.
    static func abandon(_ sources: [SourceRun], stop: RunStop, hung: [(SourceRun, PluginRunner, PluginCall)], now: UInt64) -> Never {
        for (source, runner, call) in hung {
            let frame = call.sequence.map { " on frame \($0)" } ?? ""
            let tenths = Int((Double(now - call.sinceNs) / 1e8).rounded())
            Log.error("plugin \(runner.plugin.name) hung in \(call.callback)()\(frame) for \(tenths / 10).\(tenths % 10) s: "
                      + "the run ends without waiting for it (exit code \(ExitCodes.pluginHung))", source: source.report.logSource)
        }
        for source in sources where !source.isStopped {
            let reason = source.session.draining?.reason ?? stop.requested?.why ?? .requested
            source.report.abandon(reason: reason, framesCaptured: source.session.capturedFrameCount)
        }
        // The lines just written still reach every output.
        _ = sources.first?.report.lines.output.finish()
        cvhost_guard_host_exiting()
        _exit(ExitCodes.pluginHung)
    }

    /// Destroys every plugin instance (destroy()), waiting at most `graceSeconds`: a destroy()
    /// that hangs is named on stderr and cvhost exits with code 20 (every line is written by then).
    static func shutDown(_ runners: [PluginRunner], output: OutputRouter) {
        guard !runners.isEmpty else { return }
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            runners.forEach { $0.shutdown() }
            done.signal()
        }
        // Workers bound their own destroy() (timeout_ms, then killed).
        let bound = runners.filter(\.isIsolated).map { Double($0.configuration.timeoutMs) / 1000 + 1 }.max() ?? 0
        if done.wait(timeout: .now() + max(graceSeconds, bound)) == .success { return }
        let now = HostClock.monotonicNs()
        for runner in runners where !runner.isIsolated {
            if let call = runner.hungCall(now: now) {
                Log.error("plugin \(runner.plugin.name) hung in \(call.callback)(): cvhost exits without waiting for it (exit code \(ExitCodes.pluginHung))")
            }
        }
        _ = output.finish()
        cvhost_guard_host_exiting()
        _exit(ExitCodes.pluginHung)
    }

    /// While plugins are created (before any input runs): a stop asked for then that a create()
    /// keeps waiting `graceSeconds` ends the process with exit 20, naming the plugin; there is no
    /// line to write yet. A slow create() with no stop asked for is waited for.
    final class CreationWatch: @unchecked Sendable {
        // @unchecked Sendable: state behind a lock and an Atomic.
        private let current = Locked<String?>(nil)
        private let finished = Atomic(false)

        init(stop: RunStop) {
            SystemThread.start("cvhost.creation-watch") { [self] in
                while !finished.load(ordering: .relaxed) {
                    usleep(100_000)
                    guard let asked = stop.requested, !finished.load(ordering: .relaxed),
                          Double(HostClock.monotonicNs() - asked.atNs) / 1e9 >= graceSeconds,
                          let name = current.withLock({ $0 })
                    else { continue }
                    Log.error("plugin \(name) hung in create(): cvhost exits without waiting for it (exit code \(ExitCodes.pluginHung))")
                    cvhost_guard_host_exiting()
                    _exit(ExitCodes.pluginHung)
                }
            }
        }

        /// The plugin whose instances are being created now.
        func creating(_ name: String) { current.withLock { $0 = name } }

        func finish() { finished.store(true, ordering: .relaxed) }
    }
}
