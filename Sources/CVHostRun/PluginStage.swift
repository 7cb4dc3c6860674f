import CVHostCore
import CVHostLines
import CVHostPlugins
import Dispatch

/// The run's second stage: every `--plugin` found, checked and created for every input (each
/// input its own runner of each: own queues and metrics, and own instances unless the plugin's
/// are shared by every input: SharedInstances, `share`), the thread plan (ThreadPlan: the cores
/// divided among all the run's instances, said once), and the watch that reloads a Python plugin
/// whose file changes. An input added while the run goes on gets runners of the
/// plugins found here (`makeRunners`); a removed one's are destroyed (`discard`). Closing it
/// destroys every instance still alive.
///
/// Plugins are created on a thread of their own while the run's thread watches: a create() that
/// still holds the run `graceSeconds` after a stop was asked for is named, and the run ends
/// without it (`HungPluginStop.abandoned`), as a hung process() does.
final class PluginStage: Sendable {
    /// Per input the run started with (in the order of its inputs), a runner per plugin.
    let runners: [[PluginRunner]]
    /// The run's plugins as found, in the order of the --plugin flags.
    let found: [FoundPlugin]
    /// The instances every input shares, by the --plugin's position (plugins that share).
    private let pools: [Int: SharedInstances]
    private let settings: RunSettings
    private let sink: OutputSink
    private let rules: AnalyticsRules
    /// Every runner not yet destroyed: the inputs' of the start, and those added since.
    private let alive: Locked<[PluginRunner]>
    private let watch: PluginFileWatch?

    /// A --plugin as found: what was asked (its options) and the plugin, and its own confidence threshold.
    struct FoundPlugin: Sendable {
        let spec: String
        let request: PluginRequest
        let plugin: PluginInfo
        let confidence: Double?
        /// Its options, with its share of the run's threads when it takes `threads` (ThreadPlan).
        let options: [(key: String, value: String)]
    }

    /// - Throws: RunFailure: the plugin's refusal, said with its config file line (its kind's exit
    ///   code); `HungPluginStop.abandoned` when create() held a stop. When a stop came while a
    ///   plugin was being read (a Python import), `StoppedBeforeRunning`.
    init(_ settings: RunSettings, sourceIDs: [String], sink: OutputSink, stop: RunStop, rules: AnalyticsRules) throws {
        let creating = Locked<String?>(nil)
        let made = Locked<Result<([FoundPlugin], [Int: SharedInstances], [[PluginRunner]]), Error>?>(nil)
        // Woken by the plugins made and by a stop asked for: a stop waits `graceSeconds` for a
        // create() under way before the run is abandoned without it.
        let wake = ConditionLock()
        stop.whenRequested { wake.withLock { wake.broadcast() } }
        SystemThread.start("cvhost.create") {
            let result = Result { try Self.create(settings, sourceIDs: sourceIDs, sink: sink, stop: stop, rules: rules, creating: creating) }
            wake.withLock {
                made.withLock { $0 = result }
                wake.broadcast()
            }
        }
        let result = try wake.withLock { () throws -> Result<([FoundPlugin], [Int: SharedInstances], [[PluginRunner]]), Error> in
            while true {
                if let result = made.withLock({ $0 }) { return result }
                guard let asked = stop.requested else {
                    wake.wait()
                    continue
                }
                let deadline = asked.atNs + UInt64(HungPluginStop.graceSeconds * 1e9)
                if HostClock.monotonicNs() >= deadline, let name = creating.withLock({ $0 }) {
                    Log.error("plugin \(name) hung in create(): cvhost exits without waiting for it (exit code \(ExitCodes.pluginHung))")
                    throw HungPluginStop.abandoned
                }
                // Past the grace with no create() under way: it ends on its own (the next plugin sees the stop).
                wake.wait(untilMonotonicNs: max(deadline, HostClock.monotonicNs() + 100_000_000))
            }
        }
        (found, pools, runners) = try result.get()
        self.settings = settings
        self.sink = sink
        self.rules = rules
        alive = Locked(Array(runners.joined()))
        // A Python plugin's file that changes is reloaded while the run goes on.
        watch = PluginFileWatch(runners: Array(runners.joined()))
    }

    /// Ends the reloads, then destroys every instance still alive. - Returns: false when a destroy() hung.
    func close() -> Bool {
        watch?.cancel()
        return HungPluginStop.shutDown(alive.withLock { $0 }, shared: Array(pools.values))
    }

    /// Runners for an input added while the run goes on: of every plugin of the run, or of those
    /// `named` (each a --plugin's name), in the order of the --plugin flags.
    /// - Throws: `CommandRefusal` 422: a name the run has no plugin of, or a plugin that refused to be created.
    func makeRunners(for id: String, named: [String]?, live: Bool) throws(CommandRefusal) -> [PluginRunner] {
        if let unknown = named?.first(where: { n in !found.contains { $0.plugin.name == n } }) {
            throw CommandRefusal(.unprocessable, "no plugin \(unknown) in this run: an added input takes the run's plugins (\(found.map(\.plugin.name).joined(separator: ", ")))")
        }
        var made: [PluginRunner] = []
        for (index, f) in found.enumerated() where named == nil || named!.contains(f.plugin.name) {
            do {
                made.append(try Self.runner(f, index: index, source: id, logPrefix: id, live: live, settings: settings, sink: sink, rules: rules,
                                            shared: pools[index]))
            } catch {
                _ = HungPluginStop.shutDown(made)
                throw CommandRefusal(.unprocessable, "plugin \(f.plugin.name) for \(id): " + ((error as? PluginLoadError)?.message ?? "\(error)"))
            }
        }
        alive.withLock { $0 += made }
        watch?.watch(made)
        return made
    }

    /// Destroys the runners of a removed input (its session has stopped). - Returns: false when a destroy() hung.
    func discard(_ runners: [PluginRunner]) -> Bool {
        alive.withLock { a in a.removeAll { r in runners.contains { $0 === r } } }
        watch?.forget(runners)
        return HungPluginStop.shutDown(runners)
    }

    private static func runner(_ f: FoundPlugin, index: Int, source id: String, logPrefix: String?, live: Bool, settings s: RunSettings,
                               sink: OutputSink, rules: AnalyticsRules, shared: SharedInstances?) throws -> PluginRunner {
        try PluginRunner(plugin: f.plugin, source: id, logPrefix: logPrefix, index: index, options: f.options, queueDepth: s.queueDepth,
                         backpressure: s.backpressure, isolation: s.isolation, sink: sink,
                         stage: rules.stage(plugin: f.plugin.name, index: index, source: id, live: live, confidence: f.confidence),
                         shared: shared)
    }

    /// Which plugins share their instances among the inputs (their `share`, else whether they can),
    /// how many instances a shared Python plugin gets when not told (`sharedInstances`), and the
    /// thread plan: every instance of the run counted, a shared plugin's once.
    private static func plan(_ requests: [(String, PluginRequest, PluginInfo)], _ s: RunSettings, inputs: Int) throws
        -> (shares: [Bool], instances: [Int?], plan: ThreadPlan) {
        var shares: [Bool] = [], chosen: [Int?] = [], instances = 0
        let cores = ThreadPlan.usableCores()
        for (_, request, plugin) in requests {
            let c = try PluginConfiguration(plugin: plugin, options: request.options, isolation: s.isolation)
            let share = c.share ?? SharedInstances.canShare(plugin)
            let n = share && !request.options.contains { $0.key == "instances" } ? sharedInstances(plugin, inputs: inputs, cores: cores) : nil
            shares.append(share)
            chosen.append(n)
            instances += (n ?? c.instances) * (share ? 1 : inputs)
        }
        let plan = ThreadPlan(instances: instances)
        let takers = requests.filter { $0.2.options.contains { $0.name == ThreadPlan.option } }.map(\.2.name)
        if !takers.isEmpty {
            let sharing = zip(requests, shares).filter { $1 }.map { $0.0.2.name }
            Log.info("thread plan: \(plan.cores) cores for \(instances) plugin instance\(instances == 1 ? "" : "s")"
                     + (sharing.isEmpty ? "" : " (\(sharing.joined(separator: ", ")) shared by the inputs)")
                     + ": \(takers.joined(separator: ", ")) \(plan.threadsPerInstance) thread\(plan.threadsPerInstance == 1 ? "" : "s") each")
        }
        return (shares, chosen, plan)
    }

    /// A shared Python plugin serving several inputs from the start runs an instance per core, at
    /// most one per input (nil: as its options say). An instance of a Python plugin is one worker,
    /// whose one interpreter thread is one queue for every camera: benchmarks/cameras.py, 8 cameras
    /// with detect on 2 cores (onnxruntime), one instance fell behind (3.9 detections a second of 5,
    /// p50 562 ms), two kept up (p99 190 ms) for 31 MB more a camera.
    static func sharedInstances(_ plugin: PluginInfo, inputs: Int, cores: Int) -> Int? {
        guard plugin.runtime == .python, inputs > 1, cores > 1 else { return nil }
        return min(cores, inputs)
    }

    /// Finds every plugin (a bad --plugin is said before any is created), then creates them.
    private static func create(_ s: RunSettings, sourceIDs: [String], sink: OutputSink, stop: RunStop, rules: AnalyticsRules,
                               creating: Locked<String?>) throws -> ([FoundPlugin], [Int: SharedInstances], [[PluginRunner]]) {
        // The spec being read or created, for an error about it (and where a config file gives it);
        // whether an input's runners were all made (a stop after that is no longer "before running").
        let current = Locked("")
        var madeAny = false
        // Python workers started while their plugins were described, and not taken: stopped.
        defer { WarmWorkers.discardAll() }
        do {
            let requests = try find(s.plugins, stop: stop, current: current)
            try check(names: requests.map(\.plugin.name), s, sourceIDs: sourceIDs)
            let (found, shares) = try describe(requests, s, inputs: sourceIDs.count)
            let pools = try makePools(found, shares: shares, s, sink: sink, creating: creating, current: current)
            let runners = try makeRunners(found, pools: pools, s, sourceIDs: sourceIDs, sink: sink, rules: rules, creating: creating,
                                          current: current, madeAny: &madeAny)
            return (found, pools, runners)
        } catch let error as PluginLoadError {
            if stop.requested != nil && !madeAny {
                // Stopped while a plugin was being read (a Python import): nothing has run yet.
                Log.info("\(error.message): nothing had run yet")
                throw StoppedBeforeRunning()
            }
            let spec = current.withLock { $0 }
            throw fail((s.pluginOrigins[spec].map { "\($0): " } ?? "") + error.message, code: error.kind.exitCode)
        }
    }

    /// Step 1: each --plugin read and found (a file, a name on the plugin path, a Python plugin described).
    private static func find(_ specs: [String], stop: RunStop, current: Locked<String>) throws
        -> [(spec: String, request: PluginRequest, plugin: PluginInfo)] {
        let loader = PluginLoader(warmsWorkers: true, stopRequested: { stop.requested != nil })
        return try specs.map { spec in
            current.withLock { $0 = spec }
            let request = try PluginRequest(parsing: spec)
            return (spec, request, try loader.find(request.nameOrPath, isPath: request.isPath))
        }
    }

    /// Step 2: what names plugins and inputs is checked against them (--track, a state file's
    /// inputs, zones' and lines' inputs): known once the plugins are found and the inputs named.
    private static func check(names: [String], _ s: RunSettings, sourceIDs: [String]) throws {
        if let missing = s.analytics.tracked.first(where: { !names.contains($0.plugin) }) {
            throw fail("--track \(missing.plugin): no --plugin is called \(missing.plugin) (this run's: \(names.joined(separator: ", ")))",
                       code: ExitCodes.usage)
        }
        for (id, wanted) in s.inputPlugins.sorted(by: { $0.key < $1.key }) {
            if let unknown = wanted.first(where: { !names.contains($0) }) {
                throw fail("\(s.state?.path ?? "the state file"): input \(id) names plugin \(unknown), which this run does not have (its plugins: "
                           + "\(names.joined(separator: ", ")))", code: ExitCodes.usage)
            }
        }
        if let unknown = s.analytics.unknownInputs(sourceIDs).first {
            throw fail("--zone or --line: " + AnalyticsSettings.noSuchInput(unknown, among: sourceIDs), code: ExitCodes.usage)
        }
    }

    /// Step 3: each plugin's options, its share of the threads (ThreadPlan), whether its
    /// instances serve every input, and its own confidence threshold (the tracker's follows it).
    private static func describe(_ requests: [(spec: String, request: PluginRequest, plugin: PluginInfo)], _ s: RunSettings,
                                 inputs: Int) throws -> (found: [FoundPlugin], shares: [Bool]) {
        let (shares, instances, plan) = try plan(requests.map { ($0.spec, $0.request, $0.plugin) }, s, inputs: inputs)
        let found = zip(requests, instances).map { r, n in
            let given = r.request.options.last { $0.key == "confidence" }?.value
            return FoundPlugin(spec: r.spec, request: r.request, plugin: r.plugin,
                               confidence: Double(given ?? r.plugin.options.first { $0.name == "confidence" }?.defaultValue ?? ""),
                               options: plan.options(for: r.plugin, r.request.options + (n.map { [("instances", String($0))] } ?? [])))
        }
        for f in found { s.analytics.checkThresholds(plugin: f.plugin.name, confidence: f.confidence) }
        return (found, shares)
    }

    /// Step 4: the shared instances, made once (a stop while they are made ends the run as any create() does).
    private static func makePools(_ found: [FoundPlugin], shares: [Bool], _ s: RunSettings, sink: OutputSink, creating: Locked<String?>,
                                  current: Locked<String>) throws -> [Int: SharedInstances] {
        var pools: [Int: SharedInstances] = [:]
        for (index, f) in found.enumerated() where shares[index] {
            current.withLock { $0 = f.spec }
            creating.withLock { $0 = f.plugin.name }
            do {
                let c = try PluginConfiguration(plugin: f.plugin, options: f.options, isolation: s.isolation)
                pools[index] = try SharedInstances(plugin: f.plugin, configuration: c, index: index,
                                                   label: index == 0 ? f.plugin.name : "\(f.plugin.name)#\(index)", report: { sink.write($0) })
            } catch {
                _ = HungPluginStop.shutDown([], shared: Array(pools.values))
                throw error
            }
        }
        return pools
    }

    /// Step 5: each input's runners, one per plugin (an input added while an earlier run ran, with
    /// some of the plugins, --state: those); what was made is destroyed when one cannot be.
    /// `madeAny`: set once an input has all its runners.
    private static func makeRunners(_ found: [FoundPlugin], pools: [Int: SharedInstances], _ s: RunSettings, sourceIDs: [String],
                                    sink: OutputSink, rules: AnalyticsRules, creating: Locked<String?>, current: Locked<String>,
                                    madeAny: inout Bool) throws -> [[PluginRunner]] {
        var runners: [[PluginRunner]] = []
        for id in sourceIDs {
            var forInput: [PluginRunner] = []
            for (index, f) in found.enumerated() where s.inputPlugins[id].map({ $0.contains(f.plugin.name) }) ?? true {
                current.withLock { $0 = f.spec }
                creating.withLock { $0 = f.plugin.name }
                do {
                    forInput.append(try runner(f, index: index, source: id, logPrefix: sourceIDs.count > 1 ? id : nil,
                                               live: s.inputs.first { $0.sourceID() == id }?.canReconnect ?? true, settings: s, sink: sink,
                                               rules: rules, shared: pools[index]))
                } catch {
                    _ = HungPluginStop.shutDown(Array((runners + [forInput]).joined()), shared: Array(pools.values))
                    throw error
                }
            }
            runners.append(forInput)
            madeAny = true
        }
        return runners
    }
}

/// A stop came before anything ran (while a plugin was read): the run ends with exit 0 and no line.
public struct StoppedBeforeRunning: Error {}
