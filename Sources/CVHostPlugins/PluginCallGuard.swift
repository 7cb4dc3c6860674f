import CPluginGuard
import CVHostCore
import Glibc

/// Brackets every call into one plugin object in this process (an instance, its shared stage, the
/// loading of its library): while the call runs, CPluginGuard knows the plugin (a crash then names
/// it) and the call is readable from other threads (a hang then names it: HungPluginStop, metrics'
/// `hung`).
final class PluginCallGuard: @unchecked Sendable {
    // @unchecked Sendable: `name` is written once; the call in progress is behind a lock.

    /// The plugin's name as a C string: the signal handler may read it while a callback runs.
    private let name: UnsafeMutablePointer<CChar>
    private let index: Int32
    private let call = Locked<PluginCall?>(nil)

    init(plugin: String, index: Int) {
        name = strdup(plugin)
        self.index = Int32(index)
    }

    deinit { free(name) }

    /// The call in progress, if any.
    var currentCall: PluginCall? { call.withLock { $0 } }

    /// Runs `body`, a call into the plugin: `callback` for frame `sequence` (nil: none).
    func run<R>(_ phase: cvhost_guard_phase, _ callback: String, sequence: UInt64? = nil, _ body: () throws -> R) rethrows -> R {
        cvhost_guard_enter(name, index, phase, sequence ?? 0)
        call.withLock { $0 = PluginCall(callback: callback, sequence: sequence, sinceNs: HostClock.monotonicNs()) }
        defer {
            call.withLock { $0 = nil }
            cvhost_guard_leave()
        }
        return try body()
    }
}
