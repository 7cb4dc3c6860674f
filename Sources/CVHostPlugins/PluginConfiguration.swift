import CVHostCore
import Foundation

/// How one `--plugin` runs: what the user wrote after `NAME:`, checked against the plugin's own
/// options and the host options every plugin takes, with defaults filled in.
public struct PluginConfiguration: Sendable {
    /// Every option the plugin declares, in declaration order, as create() receives it.
    public let pluginOptions: [(String, String)]
    /// Parallel instances (`instances`, `auto`: one per core).
    public let instances: Int
    /// nil: the session-wide default (`--queue-depth`, `--backpressure`).
    public let queueDepth: Int?
    public let backpressure: BackpressurePolicy?
    /// 0: every frame.
    public let maxFPS: Double
    public let mirror: Bool
    public let rotate: Int
    /// Where the plugin runs: in cvhost's process, or in a worker process of its own.
    public let isolation: PluginIsolation
    /// isolation=process: a call that takes longer is a hang (the worker is killed and restarted).
    public let timeoutMs: Int
    /// isolation=process: the worker is restarted when its resident memory grows past this (0: no limit).
    public let maxRSSMB: Int
    /// Whether the inputs of a run share this plugin's instances (`share`): true, false, or nil for
    /// the default (shared when the plugin can be: SharedInstances.canShare).
    public let share: Bool?
    /// Shared instances: the most frames of several inputs given in one call (`batch`), and how long
    /// a frame that finds an instance free waits for others to join it (`batch_wait_ms`).
    public let batch: Int
    public let batchWaitMs: Int
    /// Frames offered only while the input moves (`on_motion`, with `--motion`), and a still one
    /// every `motion_refresh` seconds anyway (nil: never).
    public let onMotion: Bool
    public let refresh: Double?

    /// Default of `batch` for a plugin that takes batches. `benchmarks/detect.py --batches` (two runs):
    /// YOLOv8n at 320 on 2 cores, onnxruntime 23.5-25.1 ms a frame alone, 16.8-17.8 in fours (1.40x),
    /// in eights 1.38-1.56x for twice the wait; OpenVINO 9.8-10.0 alone, 1.04-1.33x in fours.
    public static let defaultBatch = 4

    /// Default of `timeout_ms`. libcamera allows an IPA call 2 s; cvhost allows 5 s, the same bound
    /// as for a stop held by a hung plugin in cvhost's process: the slowest call of the bundled
    /// plugins measured here (face, 1920x1080, whole-frame search with profile) took 0.4 s, so a
    /// call ten times slower than that is still not a hang, and a hung one costs at most 5 s of frames.
    public static let defaultTimeoutMs = 5000

    /// Host-side options every plugin takes; plugins may not declare options with these names.
    public static let hostOptions: [PluginOptionSpec] = [
        PluginOptionSpec(name: "instances", type: .int, defaultValue: "1",
                         help: "run N instances on N threads (auto: one per core), results kept in frame order (stateless plugins)",
                         range: 1...64),
        PluginOptionSpec(name: "queue_depth", type: .int, defaultValue: "",
                         help: "frames that may wait for this plugin (default: --queue-depth)", range: 1...1000),
        PluginOptionSpec(name: "backpressure", type: .enum, defaultValue: "",
                         help: "drop-late or block for this plugin (default: --backpressure)", choices: ["drop-late", "block"]),
        PluginOptionSpec(name: "max_fps", type: .double, defaultValue: "0",
                         help: "deliver at most this many frames per second of media time (0: all)", range: 0...10000),
        PluginOptionSpec(name: "mirror", type: .bool, defaultValue: "false",
                         help: "flip frames left to right before this plugin sees them (results are in the flipped frame's pixels)"),
        PluginOptionSpec(name: "rotate", type: .enum, defaultValue: "0",
                         help: "turn frames clockwise by this many degrees, after mirror (for a camera mounted sideways or upside down)",
                         choices: ["0", "90", "180", "270"]),
        PluginOptionSpec(name: "isolation", type: .enum, defaultValue: "",
                         help: "none: in cvhost's process; process: in a worker process, restarted when it crashes (default: --isolation)",
                         choices: ["none", "process"]),
        PluginOptionSpec(name: "timeout_ms", type: .int, defaultValue: String(defaultTimeoutMs),
                         help: "isolation=process: a call taking longer is a hang; the worker is killed and restarted", range: 10...3_600_000),
        PluginOptionSpec(name: "max_rss_mb", type: .int, defaultValue: "0",
                         help: "isolation=process: restart the worker when its resident memory exceeds this (0: no limit)", range: 0...1_000_000),
        PluginOptionSpec(name: "share", type: .enum, defaultValue: "auto",
                         help: "one set of instances for every input (true), a set per input (false); auto: shared when the plugin keeps no state between frames",
                         choices: ["auto", "true", "false"]),
        PluginOptionSpec(name: "batch", type: .int, defaultValue: "",
                         help: "shared instances: the most frames of several inputs in one call, for a plugin that takes them together "
                             + "(default \(defaultBatch) for such a plugin, else 1)", range: 1...Double(WorkerMessage.maxBatch)),
        PluginOptionSpec(name: "batch_wait_ms", type: .int, defaultValue: "0",
                         help: "shared instances: how long a frame that finds an instance free waits for others to join its batch "
                             + "(0: batches are the frames that queued while the instances were busy)", range: 0...1000),
        PluginOptionSpec(name: "on_motion", type: .bool, defaultValue: "false",
                         help: "offer this plugin only frames in which the input moves, and the next `hold` seconds (--motion; with its defaults when not given)"),
        PluginOptionSpec(name: "motion_refresh", type: .double, defaultValue: "10",
                         help: "on_motion: a frame every this many seconds anyway, still or not (0: never)", range: 0...86400),
    ]

    /// Checks `options` (as written, host options included) against `plugin`.
    /// - Parameter warn: told when the options make sense but may not do what the user expects.
    /// - Throws: `PluginLoadError` (.unknownOption, .badOptionValue).
    /// - Parameter isolation: the run-wide default (`--isolation`).
    public init(plugin: PluginInfo, options: [(key: String, value: String)], isolation defaultIsolation: PluginIsolation = .none,
                warn: (String) -> Void = { _ in }) throws {
        var given: [String: String] = [:]
        for (key, value) in options {
            guard plugin.options.contains(where: { $0.name == key }) || Self.hostOptions.contains(where: { $0.name == key }) else {
                let names = (plugin.options + Self.hostOptions).map(\.name)
                let meant = Suggestion.closest(to: key, in: names).map { " (did you mean '\($0)'?)" } ?? ""
                throw PluginLoadError(.unknownOption, "plugin \(plugin.name) has no option '\(key)'\(meant): its options are \(names.joined(separator: ", "))")
            }
            given[key] = value
        }
        func hostValue(_ name: String) throws -> String? {
            guard let v = given[name] else { return nil }
            return try Self.hostOptions.first { $0.name == name }!.normalize(v, plugin: plugin.name)
        }
        // instances=auto: one per core the process may use.
        instances = given["instances"]?.lowercased() == "auto"
            ? max(1, min(64, ProcessInfo.processInfo.activeProcessorCount))
            : try hostValue("instances").flatMap { Int($0) } ?? 1
        if instances > 1 && !plugin.isStateless && plugin.runtime == .python {
            // Its results would change silently (each instance's state sees some of the frames):
            // refused, as the bundled plugins with state refuse it themselves.
            throw PluginLoadError(.badOptionValue, "plugin \(plugin.name) keeps state between frames (stateless = False): instances=\(instances) "
                                  + "would give each instance only some of the frames; run one instance, or declare stateless = True if it keeps none")
        }
        if instances > 1 && !plugin.isStateless {
            warn("plugin \(plugin.name) keeps state between frames; with instances=\(instances) each instance sees only some frames")
        }
        pluginOptions = try plugin.options.map { spec in
            (spec.name, try spec.normalize(given[spec.name] ?? spec.defaultValue, plugin: plugin.name))
        }
        queueDepth = try hostValue("queue_depth").flatMap { Int($0) }
        backpressure = try hostValue("backpressure").flatMap { BackpressurePolicy(rawValue: $0) }
        maxFPS = try hostValue("max_fps").flatMap { Double($0) } ?? 0
        mirror = try hostValue("mirror") == "true"
        rotate = try hostValue("rotate").flatMap { Int($0) } ?? 0
        // A Python plugin runs in its interpreter's process: there is no running it in cvhost's.
        if plugin.runtime == .python {
            if try hostValue("isolation") == PluginIsolation.none.rawValue {
                throw PluginLoadError(.badOptionValue, "plugin \(plugin.name) is written in Python: it runs in worker processes (isolation=process), not in cvhost's")
            }
            isolation = .process
        } else {
            isolation = try hostValue("isolation").flatMap { PluginIsolation(rawValue: $0) } ?? defaultIsolation
        }
        timeoutMs = try hostValue("timeout_ms").flatMap { Int($0) } ?? Self.defaultTimeoutMs
        maxRSSMB = try hostValue("max_rss_mb").flatMap { Int($0) } ?? 0
        switch try hostValue("share") {
        case "true"?:
            guard SharedInstances.canShare(plugin) else {
                throw PluginLoadError(.badOptionValue, "plugin \(plugin.name) cannot share its instances among inputs (share=true): it "
                                      + (plugin.isStateless ? "has an ordered stage or a flush, which follow one input's frames" : "keeps state between frames"))
            }
            share = true
        case "false"?: share = false
        default: share = nil
        }
        let batchGiven = try hostValue("batch").flatMap { Int($0) }
        batchWaitMs = try hostValue("batch_wait_ms").flatMap { Int($0) } ?? 0
        onMotion = try hostValue("on_motion") == "true"
        let refreshSeconds = try hostValue("motion_refresh").flatMap { Double($0) } ?? 10
        refresh = refreshSeconds > 0 ? refreshSeconds : nil
        if let n = batchGiven, n > 1, !plugin.takesBatches {
            throw PluginLoadError(.badOptionValue, "plugin \(plugin.name) takes one frame a call (batch=\(n)): only a plugin with "
                                  + "process_batch (a Python plugin's) takes several")
        }
        if share == false, let n = batchGiven, n > 1 {
            throw PluginLoadError(.badOptionValue, "plugin \(plugin.name): batch=\(n) gathers the frames of several inputs on the instances "
                                  + "they share, and share=false gives each input its own: drop one of the two")
        }
        batch = batchGiven ?? (plugin.takesBatches ? Self.defaultBatch : 1)
        if batchWaitMs > 0 && batch == 1 {
            throw PluginLoadError(.badOptionValue, "plugin \(plugin.name): batch_wait_ms waits for a batch to fill, and "
                                  + (plugin.takesBatches ? "batch=1 makes none" : "the plugin takes one frame a call"))
        }
        if isolation == .none, let only = ["timeout_ms", "max_rss_mb"].first(where: { given[$0] != nil }) {
            throw PluginLoadError(.badOptionValue, "plugin \(plugin.name): option \(only) needs isolation=process (a plugin in cvhost's process cannot be stopped or restarted)")
        }
    }
}

/// Where a plugin's code runs.
public enum PluginIsolation: String, Sendable, CaseIterable {
    /// In cvhost's own process: the cheapest calls; a crash of the plugin ends the run (exit 19).
    case none
    /// In a worker process: a crash, hang or runaway memory restarts the plugin; the run goes on.
    case process
}
