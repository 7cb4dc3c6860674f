import CVHostCore
import CVHostLines
import CVHostPlugins
import Dispatch

/// The run's second stage: every `--plugin` found, checked and created for every input (each
/// input its own runner of each: own instances, queues and metrics), and the watch that reloads a
/// Python plugin whose file changes. Closing it destroys every instance.
///
/// Plugins are created on a thread of their own while the run's thread watches: a create() that
/// still holds the run `graceSeconds` after a stop was asked for is named, and the run ends
/// without it (`HungPluginStop.abandoned`), as a hung process() does.
final class PluginStage: Sendable {
    /// Per input (in the order of the run's inputs), a runner per plugin.
    let runners: [[PluginRunner]]
    private let watch: PluginFileWatch?

    /// - Throws: RunFailure: the plugin's refusal, said with its config file line (its kind's exit
    ///   code); `HungPluginStop.abandoned` when create() held a stop. When a stop came while a
    ///   plugin was being read (a Python import), `StoppedBeforeRunning`.
    init(_ settings: RunSettings, sourceIDs: [String], sink: OutputSink, stop: RunStop) throws {
        let creating = Locked<String?>(nil)
        let made = Locked<Result<[[PluginRunner]], Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        SystemThread.start("cvhost.create") {
            let result = Result { try Self.create(settings, sourceIDs: sourceIDs, sink: sink, stop: stop, creating: creating) }
            made.withLock { $0 = result }
            done.signal()
        }
        while done.wait(timeout: .now() + 0.1) == .timedOut {
            guard let asked = stop.requested, Double(HostClock.monotonicNs() - asked.atNs) / 1e9 >= HungPluginStop.graceSeconds,
                  let name = creating.withLock({ $0 }) else { continue }
            Log.error("plugin \(name) hung in create(): cvhost exits without waiting for it (exit code \(ExitCodes.pluginHung))")
            throw HungPluginStop.abandoned
        }
        runners = try made.withLock { $0! }.get()
        // A Python plugin's file that changes is reloaded while the run goes on.
        watch = PluginFileWatch(runners: Array(runners.joined()))
    }

    /// Ends the reloads, then destroys every instance. - Returns: false when a destroy() hung.
    func close() -> Bool {
        watch?.cancel()
        return HungPluginStop.shutDown(Array(runners.joined()))
    }

    /// Finds every plugin (a bad --plugin is said before any is created), then creates them.
    private static func create(_ s: RunSettings, sourceIDs: [String], sink: OutputSink, stop: RunStop,
                               creating: Locked<String?>) throws -> [[PluginRunner]] {
        var runners: [[PluginRunner]] = []
        // The spec being read or created, for an error about it (and where a config file gives it).
        var current = ""
        // Python workers started while their plugins were described, and not taken: stopped.
        defer { WarmWorkers.discardAll() }
        do {
            let loader = PluginLoader(warmsWorkers: true, stopRequested: { stop.requested != nil })
            let requests = try s.plugins.map { spec in
                current = spec
                let request = try PluginRequest(parsing: spec)
                return (request, try loader.find(request.nameOrPath, isPath: request.isPath))
            }
            // Whose boxes are followed, and where: known once the plugins are found and the inputs named.
            let names = requests.map(\.1.name)
            if let missing = s.analytics.tracked.first(where: { !names.contains($0.plugin) }) {
                throw fail("--track \(missing.plugin): no --plugin is called \(missing.plugin) (this run's: \(names.joined(separator: ", ")))",
                           code: ExitCodes.usage)
            }
            if let unknown = s.analytics.unknownInputs(sourceIDs).first {
                throw fail("--zone or --line: " + AnalyticsSettings.noSuchInput(unknown, among: sourceIDs), code: ExitCodes.usage)
            }
            // A plugin's own threshold (its confidence option, given or its default): the tracker's follows it.
            let confidence = requests.map { request, plugin -> Double? in
                let given = request.options.last { $0.key == "confidence" }?.value
                return Double(given ?? plugin.options.first { $0.name == "confidence" }?.defaultValue ?? "")
            }
            for (index, (_, plugin)) in requests.enumerated() { s.analytics.checkThresholds(plugin: plugin.name, confidence: confidence[index]) }
            for id in sourceIDs {
                var forInput: [PluginRunner] = []
                for (index, (request, plugin)) in requests.enumerated() {
                    current = s.plugins[index]
                    creating.withLock { $0 = plugin.name }
                    do {
                        forInput.append(try PluginRunner(plugin: plugin, source: id, logPrefix: sourceIDs.count > 1 ? id : nil, index: index,
                                                         options: request.options, queueDepth: s.queueDepth, backpressure: s.backpressure,
                                                         isolation: s.isolation, sink: sink,
                                                         resultStage: s.analytics.stage(plugin: plugin.name, index: index, source: id,
                                                                                        live: s.inputs.first { $0.sourceID() == id }?.canReconnect ?? true,
                                                                                        confidence: confidence[index])))
                    } catch {
                        _ = HungPluginStop.shutDown(Array((runners + [forInput]).joined()))
                        throw error
                    }
                }
                runners.append(forInput)
            }
            return runners
        } catch let error as PluginLoadError {
            if stop.requested != nil && runners.isEmpty {
                // Stopped while a plugin was being read (a Python import): nothing has run yet.
                Log.info("\(error.message): nothing had run yet")
                throw StoppedBeforeRunning()
            }
            throw fail((s.pluginOrigins[current].map { "\($0): " } ?? "") + error.message, code: error.kind.exitCode)
        }
    }
}

/// A stop came before anything ran (while a plugin was read): the run ends with exit 0 and no line.
public struct StoppedBeforeRunning: Error {}
