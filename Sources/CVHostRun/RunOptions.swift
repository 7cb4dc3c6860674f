import CVHostOutput

/// Every option of `cvhost run` but `--config` itself, declared once with what a config file's
/// key of the same name holds and what a reload of the config file (SIGHUP) does when it changed:
/// applies it while the run goes on, or says that it takes a restart. The config file's keys
/// (RunConfigFile), the reload's report (RunReload), the executable's list of long options and
/// the guide's table are checked against it (ConfigFileTests, FirstContactTests): an option added
/// to `run` without a row here fails them.
public struct RunOption: Sendable {
    /// What a reload does when the config file's value changed.
    public enum Reload: Sendable {
        /// Applied while the run goes on (inputs, tracks, zones and lines).
        case applied
        /// Said on stderr to take a restart; the run goes on with the value it started with.
        case restart(differs: @Sendable (RunSettings, RunSettings) -> Bool)
    }

    /// The long option without its dashes: also the config file's key.
    public let name: String
    public let kind: RunConfigFile.Kind
    public let reload: Reload

    init(_ name: String, _ kind: RunConfigFile.Kind, _ reload: Reload) {
        self.name = name
        self.kind = kind
        self.reload = reload
    }

    /// One a reload cannot change: `field` of the settings is compared.
    static func restart<T: Equatable>(_ name: String, _ kind: RunConfigFile.Kind, _ field: @escaping @Sendable (RunSettings) -> T) -> RunOption {
        RunOption(name, kind, .restart(differs: { field($0) != field($1) }))
    }

    public var takesRestart: Bool {
        if case .restart = reload { return true }
        return false
    }
}

public enum RunOptions {
    public static let all: [RunOption] = [
        // What a reload applies: inputs added, changed or removed; tracks, zones, lines, filters and masks set or removed.
        RunOption("input", .list, .applied),
        RunOption("device", .list, .applied),
        RunOption("track", .list, .applied),
        RunOption("zone", .list, .applied),
        RunOption("line", .list, .applied),
        RunOption("filter", .list, .applied),
        RunOption("mask", .list, .applied),
        // What is made once, at the start.
        .restart("plugin", .list) { $0.plugins },
        .restart("output", .list) { $0.outputs },
        .restart("snapshots", .string) { $0.snapshots },
        .restart("clips", .string) { $0.clips },
        .restart("events-db", .string) { $0.eventsDatabase },
        .restart("state", .string) { $0.state?.path },
        .restart("reset-counts-at", .string) { $0.resetCountsAt },
        .restart("motion", .string) { $0.motion },
        .restart("max-inputs", .integer) { $0.maxInputs },
        .restart("queue-depth", .integer) { $0.queueDepth },
        .restart("backpressure", .string) { $0.backpressure },
        .restart("isolation", .string) { $0.isolation },
        // How inputs are opened: one added by a reload opens with the start's values.
        .restart("format", .string) { $0.format },
        .restart("pixel-format", .string) { $0.pixelFormat },
        .restart("control", .list) { $0.controls },
        .restart("reconnect", .flag) { $0.reconnect },
        .restart("rtsp-transport", .string) { $0.rtspTransport },
        .restart("open-timeout", .number) { $0.openTimeout },
        .restart("max-image-pixels", .integer) { $0.maxImagePixels },
        // The run's limits and what it writes.
        .restart("max-frames", .integer) { $0.maxFrames },
        .restart("duration", .number) { $0.duration },
        .restart("oneshot", .flag) { $0.oneshot },
        .restart("metrics-interval", .number) { $0.metricsInterval },
        .restart("results-only", .flag) { $0.stdoutSelection == .results },
        .restart("events", .flag) { $0.stdoutSelection == .events },
        .restart("field", .string) { s -> String? in if case .field(let name) = s.stdoutSelection { name } else { nil } },
        .restart("stdin-commands", .invertedFlag) { $0.stdinCommands },
        .restart("verbose", .flag) { $0.verbose },
        .restart("quiet", .flag) { $0.quiet },
        // --http and its live view.
        .restart("http", .string) { s -> String? in s.liveView.map { "\($0.host):\($0.port)" } },
        .restart("http-token-file", .string) { $0.liveView?.token },
        .restart("http-allow-host", .list) { $0.liveView?.allowHosts },
        .restart("http-linger", .number) { $0.liveView?.linger },
        .restart("http-public-url", .string) { $0.liveView?.publicURL },
        .restart("preview-fps", .number) { $0.liveView?.previewFPS },
        .restart("preview-width", .integer) { $0.liveView?.previewWidth },
        .restart("allow-inputs", .string) { $0.liveView?.allowInputs },
        // A node of a site (CVHostFleet).
        .restart("fleet", .string) { $0.fleet },
        .restart("node", .string) { $0.node },
    ]

    /// The config file's keys: the options' names.
    public static let keys: [String: RunConfigFile.Kind] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0.kind) })

    /// The options that changed between the run's settings and those read anew, of those a reload
    /// cannot change, in the table's order.
    static func needingRestart(_ new: RunSettings, _ old: RunSettings) -> [String] {
        all.compactMap { o in
            guard case .restart(let differs) = o.reload, differs(new, old) else { return nil }
            return o.name
        }
    }
}
