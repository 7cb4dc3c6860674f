import CVHostCore
import CVHostPluginABI

/// A plugin's instances in cvhost's own process (isolation=none): the cheapest calls, and a
/// crash of the plugin is a crash of cvhost (CPluginGuard names it; exit 19).
final class InProcessInstances: PluginInstances, @unchecked Sendable {
    // @unchecked Sendable: `instances` is fixed after init; each is used by one worker thread.

    private let instances: [PluginInstance]
    private let shared: PluginSharedStage?

    /// Loads the plugin into this process and creates its shared stage (if it has one) and instances.
    /// - Throws: `PluginLoadError` (.notSharedObject, .createFailed, .badOptionValue).
    init(plugin: PluginInfo, configuration: PluginConfiguration, source: String, index: Int, label: String) throws {
        let library = try PluginLibrary(plugin)
        let count = configuration.instances
        shared = try plugin.hasOrderedStage
            ? PluginSharedStage(library: library, options: configuration.pluginOptions,
                                services: HostServices(source: source, pluginName: plugin.name, pluginIndex: index, logSource: label,
                                                       instance: nil, instanceCount: count))
            : nil
        var made: [PluginInstance] = []
        do {
            for worker in 0..<count {
                let services = HostServices(source: source, pluginName: plugin.name, pluginIndex: index,
                                            logSource: count == 1 ? label : "\(label) instance \(worker)",
                                            instance: worker, instanceCount: count, shared: shared?.handle)
                made.append(try PluginInstance(library: library, options: configuration.pluginOptions, services: services))
            }
        } catch {
            made.forEach { $0.destroy() }
            shared?.destroy()
            throw error
        }
        instances = made
    }

    var count: Int { instances.count }

    func process(worker: Int, frame: inout cvhost_frame, stamp: HostServices.FrameStamp) -> PluginCallOutcome {
        let (status, lines) = instances[worker].process(&frame, stamp: stamp)
        return .returned(status: status, lines: lines)
    }

    func ordered(worker: Int, frame: inout cvhost_frame, stamp: HostServices.FrameStamp) -> PluginCallOutcome {
        let (status, lines) = instances[worker].ordered(shared: shared?.handle, &frame, stamp: stamp)
        shared?.services.remember(frame: stamp)
        return .returned(status: status, lines: lines)
    }

    func flush(worker: Int) -> PluginCallOutcome {
        let (status, lines) = instances[worker].flush()
        return .returned(status: status, lines: lines)
    }

    func flushShared() -> PluginCallOutcome {
        guard let shared else { return .returned(status: 0, lines: []) }
        let (status, lines) = shared.flush()
        return .returned(status: status, lines: lines)
    }

    func shutdown() {
        instances.forEach { $0.destroy() }
        shared?.destroy()
    }

    var currentCalls: [PluginCall] { instances.compactMap(\.currentCall) }

    var invalidResults: UInt64 { instances.reduce(shared?.services.invalidResults ?? 0) { $0 + $1.services.invalidResults } }
}
