import CVHostCore
@testable import CVHostPlugins
import Glibc
import Testing

/// A worker that cannot be started for want of a descriptor or memory is the system's shortage,
/// not the plugin's crash: IsolatedInstances then retries without a step towards quarantine.
@Suite("Plugin load errors: shortages")
struct PluginLoadErrorTests {
    @Test("EMFILE, ENFILE, ENOMEM, EAGAIN and ENOBUFS are shortages", arguments: [EMFILE, ENFILE, ENOMEM, EAGAIN, ENOBUFS])
    func shortage(errno: Int32) {
        #expect(PluginLoadError(.createFailed, "x", cause: Errno(rawValue: errno)).isShortage)
    }

    @Test("other errors, and refusals with no system call behind them, are not")
    func notShortage() {
        #expect(!PluginLoadError(.createFailed, "x", cause: Errno(rawValue: ENOENT)).isShortage)
        #expect(!PluginLoadError(.createFailed, "x", cause: Errno(rawValue: EACCES)).isShortage)
        #expect(!PluginLoadError(.createFailed, "crashed while starting").isShortage)
    }
}
