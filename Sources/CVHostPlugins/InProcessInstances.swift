import CVHostCore
import CVHostLines
import CVHostPluginABI

/// A plugin's instances in cvhost's own process (isolation=none): the cheapest calls, and a
/// crash of the plugin is a crash of cvhost (CPluginGuard names it; exit 19).
final class InProcessInstances: PluginInstances, @unchecked Sendable {
    // @unchecked Sendable: `instances` is fixed after init; each is used by one worker thread.

    private let instances: [PluginInstance]
    private let shared: PluginSharedStage?
    /// The input whose lines its ordered stage and flush write (nil: shared by every input, which has neither).
    private let source: String?
    private let pluginName: String, pluginIndex: Int
    let frameRequest: FrameRequest?

    /// Loads the plugin into this process and creates its shared stage (if it has one) and instances.
    /// - Throws: `PluginLoadError` (.notSharedObject, .createFailed, .badOptionValue).
    init(plugin: PluginInfo, configuration: PluginConfiguration, source: String?, index: Int, label: String) throws {
        self.source = source
        pluginName = plugin.name
        pluginIndex = index
        let library = try PluginLibrary(plugin, pluginIndex: index)
        (shared, instances, frameRequest) = try InProcessInstances.create(library: library, options: configuration.pluginOptions,
                                                                          count: configuration.instances, index: index, label: label)
    }

    /// Creates the shared stage (if the plugin has one), then `count` instances; undoes what was
    /// made when one fails. Also how a worker process makes them. - Returns: them, and the frames
    /// they asked for (request_frames).
    static func create(library: PluginLibrary, options: [(String, String)], count: Int, index: Int, label: String) throws
        -> (PluginSharedStage?, [PluginInstance], FrameRequest?)
    {
        let requests = FrameRequests(declared: library.info.pixelFormats)
        let shared = try library.info.hasOrderedStage
            ? PluginSharedStage(library: library, options: options,
                                services: HostServices(pluginIndex: index, logSource: label, instance: nil, instanceCount: count))
            : nil
        var made: [PluginInstance] = []
        do {
            for worker in 0..<count {
                let services = HostServices(pluginIndex: index, logSource: count == 1 ? label : "\(label) instance \(worker)",
                                            instance: worker, instanceCount: count, shared: shared?.handle, requests: requests)
                made.append(try PluginInstance(library: library, options: options, services: services))
            }
        } catch {
            made.forEach { $0.destroy() }
            shared?.destroy()
            throw error
        }
        return (shared, made, requests.request)
    }

    var count: Int { instances.count }
    let isolated = false
    let workerMetrics: JSONObject? = nil
    let isQuarantined = false

    func process(lane: Int, frame: inout cvhost_frame, pixels: PixelBuffer, full: PixelBuffer?,
                 stamp: HostServices.FrameStamp, source: String) -> PluginCallOutcome {
        returned(instances[lane].process(&frame, stamp: stamp), source: source)
    }

    func ordered(lane: Int, frame: inout cvhost_frame, pixels: PixelBuffer, stamp: HostServices.FrameStamp) -> PluginCallOutcome {
        defer { shared?.services.remember(frame: stamp) }
        return returned(instances[lane].ordered(shared: shared?.handle, &frame, stamp: stamp))
    }

    func flush(lane: Int) -> PluginCallOutcome {
        returned(instances[lane].flush())
    }

    func flushShared() -> PluginCallOutcome {
        guard let shared else { return .returned(status: 0, lines: []) }
        return returned(shared.flush())
    }

    func shutdown() {
        instances.forEach { $0.destroy() }
        shared?.destroy()
    }

    var currentCalls: [PluginCall] { (instances.map(\.calls) + [shared?.calls].compactMap { $0 }).compactMap(\.currentCall) }

    var invalidResults: UInt64 { instances.reduce(shared?.services.invalidResults ?? 0) { $0 + $1.services.invalidResults } }

    private func returned(_ call: (Int32, [EmittedResult]), source: String? = nil) -> PluginCallOutcome {
        .returned(status: call.0, lines: call.1.map { $0.line(source: source ?? self.source ?? "", plugin: pluginName, pluginIndex: pluginIndex) })
    }
}
