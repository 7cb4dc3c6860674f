import CVHostCore
import CVHostPlugins
import Foundation
import Glibc
import Synchronization

/// A stop completes even when a plugin hangs. Once a stop is under way (a signal, --duration,
/// --max-frames, the end of the input), cvhost waits for the plugins to finish the frames they
/// were given, but no single call into a plugin may keep it waiting more than `graceSeconds`:
/// then the run ends without it. The inputs still running write their final metrics (the hung
/// call named in `hung`) and their session.stopped, the hung plugins are named on stderr, and the
/// run ends with exit code 20 and `abandonsThreads` (a hung call cannot be taken back from its
/// thread; its instance is never destroyed): the executable ends the process at once. The same
/// bound holds for create() after a stop, and for destroy() after the last lines.
enum HungPluginStop {
    static let graceSeconds = 5.0

    /// The run's ending when a plugin's call never returned.
    static let abandoned = RunFailure(ExitCodes.pluginHung, abandonsThreads: true)

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

    /// Writes the final lines of every input still running and names the hung calls; the run then
    /// ends with `abandoned`, without waiting for those inputs.
    static func abandon(_ sources: [SourceRun], stop: RunStop, hung: [(SourceRun, PluginRunner, PluginCall)], now: UInt64) {
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
    }

    /// Destroys every plugin instance (destroy()): the runners', then those every input shared,
    /// waiting at most `graceSeconds` (or a worker's own bound): a destroy() that hangs is named on stderr.
    /// - Returns: false when one hung (its thread is left in it).
    static func shutDown(_ runners: [PluginRunner], shared: [SharedInstances] = []) -> Bool {
        guard !runners.isEmpty || !shared.isEmpty else { return true }
        let done = DispatchSemaphore(value: 0)
        SystemThread.start("cvhost.destroy") {
            runners.forEach { $0.shutdown() }
            shared.forEach { $0.shutdown() }
            done.signal()
        }
        // Workers bound their own destroy() (timeout_ms, then killed).
        let isolated: [PluginConfiguration] = runners.filter(\.isIsolated).map(\.configuration)
            + shared.map(\.configuration).filter { $0.isolation == .process }
        let bound: Double = isolated.map { Double($0.timeoutMs) / 1000 + 1 }.max() ?? 0
        if done.wait(timeout: .now() + max(graceSeconds, bound)) == .success { return true }
        let now = HostClock.monotonicNs()
        for runner in runners where !runner.isIsolated {
            if let call = runner.hungCall(now: now) {
                Log.error("plugin \(runner.plugin.name) hung in \(call.callback)(): cvhost exits without waiting for it (exit code \(ExitCodes.pluginHung))")
            }
        }
        return false
    }
}
