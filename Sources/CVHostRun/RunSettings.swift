import CVHostAnalytics
import CVHostCore
import CVHostEvidence
import CVHostMotion
import CVHostOutput
import CVHostPlugins
import CVHostSources
import CVHostV4L2
import Foundation

/// Everything `cvhost run` is asked to do, from its flags and config file, checked as a whole:
/// a value that cannot be run is a UsageError (exit 64) naming its option, before anything opens.
/// The CLI parses words into these fields; `HostRun` runs them.
public struct RunSettings: Sendable {
    /// The longest time any seconds option takes (1e9 s, about 31 years): no overflow of ns.
    public static let maxSeconds = 1e9

    /// `--plugin` specs as written (NAME[:key=value,...]); parsed and found when the run starts.
    public var plugins: [String]
    /// Where a config file gives a plugin spec ("FILE:LINE: plugin"), to put in front of an error about it.
    public var pluginOrigins: [String: String] = [:]
    /// `--input` and `--device`, in order, or the first camera.
    public var inputs: [InputSpec]
    public var outputs: [OutputDestination]
    /// What of the lines stdout gets (`--results-only`, `--field NAME`).
    public var stdoutSelection: StdoutSelection
    // Cameras:
    public var format: String?
    public var pixelFormat: String?
    /// `--control NAME=VALUE`, each a known control.
    public var controls: [String]
    public var reconnect: Bool
    // Streams:
    public var rtspTransport: String?
    public var openTimeout: Double
    // Images:
    /// An image whose header declares more pixels is skipped before decoding (0: no limit of cvhost's).
    public var maxImagePixels: Int
    // Plugins:
    public var queueDepth: Int
    public var backpressure: BackpressurePolicy?
    public var isolation: PluginIsolation
    // When the run stops and what it says:
    public var oneshot: Bool
    public var maxFrames: UInt64?
    public var duration: Double?
    public var metricsInterval: Double
    public var stdinCommands: Bool
    public var verbose: Bool
    public var quiet: Bool
    public var liveView: LiveViewSettings?
    /// `--track`, `--zone`, `--line`.
    public var analytics = AnalyticsSettings()
    /// `--snapshots`, `--clips`: evidence of the events (CVHostEvidence).
    /// The most inputs the run may have at once, those added while it runs counted (`--max-inputs`).
    public private(set) var maxInputs = 32
    public var snapshots: EvidenceSettings?
    public var clips: EvidenceSettings?
    /// `--events-db`: the event store's file (nil: none).
    public var eventsDatabase: String?
    /// `--reset-counts-at`: the local time of day the lines' and zones' counts go back to 0 (nil: never).
    public var resetCountsAt: DailyTime?
    /// `--motion`: how each input's motion is looked for (motion.started, motion.ended); nil: it is not.
    public var motion: MotionSettings?

    /// How input `source`'s motion is looked for, and where not (its masks); nil without --motion.
    func motion(on source: String) -> (settings: MotionSettings, masks: [BoxMask])? {
        motion.map { ($0, analytics.masks(on: source)) }
    }

    /// `--fleet nats://.../SITE`: the site this run is a node of (CVHostFleet runs it); nil: none.
    public var fleet: String?
    /// `--node NAME`: the node's name in its site (nil: the host's name).
    public var node: String?

    /// The run goes on with no input, until it is stopped, for inputs given to it while it runs (a
    /// fleet's node: `cvhost run --fleet`); without it, a run ends when its last input has.
    public var waitsForInputs = false

    /// `--state`: where the changes made while running are kept (nil: not kept).
    public private(set) var state: RunStateFile?
    /// The plugins named for an input added while running (a state file's), by its name; an input not here has all the run's.
    public private(set) var inputPlugins: [String: [String]] = [:]

    /// The state file, and the plugins it names for inputs it added (checked once the plugins are found: PluginStage).
    public mutating func keep(_ state: RunStateFile?, inputPlugins: [String: [String]]) {
        self.state = state
        self.inputPlugins = inputPlugins
    }

    /// `--max-inputs`, checked against the inputs given.
    public mutating func limitInputs(to most: Int) throws(UsageError) {
        guard (1...Self.mostInputs).contains(most) else { throw UsageError("--max-inputs must be from 1 to \(Self.mostInputs)") }
        guard inputs.count <= most else { throw UsageError("\(inputs.count) inputs are given and --max-inputs is \(most): raise --max-inputs") }
        maxInputs = most
    }

    /// The highest --max-inputs: each input has a capture thread and plugin instances of its own.
    public static let mostInputs = 256

    /// `--snapshots` and `--clips` checked: nil, or the setting; a one-line refusal naming it.
    public static func evidence(_ text: String?, _ kind: EvidenceSettings.Kind) throws(UsageError) -> EvidenceSettings? {
        guard let text else { return nil }
        do {
            return try EvidenceSettings(parsing: text, kind: kind)
        } catch {
            throw UsageError(error.description)
        }
    }

    /// `--events-db` checked: its path; by default, with evidence kept, `events.sqlite` in its folder
    /// (the snapshots', else the clips'); `off`: none.
    public static func eventsDatabase(_ text: String?, snapshots: EvidenceSettings?, clips: EvidenceSettings?) throws(UsageError) -> String? {
        guard let text else { return (snapshots ?? clips).map { $0.folder + "/events.sqlite" } }
        if text == "off" { return nil }
        guard !text.isEmpty, !text.hasSuffix("/") else {
            throw UsageError("--events-db needs a file's path (e.g. /var/lib/cvhost/events.sqlite), or off")
        }
        return text
    }

    /// The events evidence is kept of when a setting names none: the counts' with --track, else every result.
    var defaultEvidenceEvents: [String] {
        analytics.tracked.isEmpty ? ["result"] : ["line.crossed", "zone.entered", "zone.dwell"]
    }

    /// - Throws: UsageError naming the option whose value cannot be run.
    public init(plugins: [String], inputs: [String] = [], devices: [String] = [], outputs: [String] = [],
                resultsOnly: Bool = false, events: Bool = false, field: String? = nil,
                format: String? = nil, pixelFormat: String? = nil, controls: [String] = [], reconnect: Bool = false,
                rtspTransport: String? = nil, openTimeout: Double = 10, maxImagePixels: Int = StillImageDevice.defaultMaxPixels,
                queueDepth: Int = 2, backpressure: BackpressurePolicy? = nil, isolation: PluginIsolation = .none,
                oneshot: Bool = false, maxFrames: UInt64? = nil, duration: Double? = nil, metricsInterval: Double = 5,
                stdinCommands: Bool = true, verbose: Bool = false, quiet: Bool = false, liveView: LiveViewSettings? = nil,
                environment: [String: String] = ProcessInfo.processInfo.environment) throws(UsageError) {
        if plugins.isEmpty { throw UsageError("give at least one --plugin (cvhost plugins lists them)") }
        let specs = try InputSpec.parse(inputs: inputs, devices: devices)
        if !specs.contains(where: \.isCamera) && (format != nil || pixelFormat != nil || !controls.isEmpty) {
            throw UsageError("--format, --pixel-format and --control apply to cameras, not to --input")
        }
        if reconnect && !specs.contains(where: \.canReconnect) {
            throw UsageError("--reconnect applies to cameras and network streams (rtsp://, http://...), not to \(inputs.joined(separator: ", "))")
        }
        if let rtspTransport, !["tcp", "udp"].contains(rtspTransport) {
            throw UsageError("--rtsp-transport takes tcp or udp, not \(rtspTransport)")
        }
        if openTimeout <= 0 || openTimeout > Self.maxSeconds || !openTimeout.isFinite {
            throw UsageError("--open-timeout must be more than 0 seconds, and at most 1e9")
        }
        if maxImagePixels < 0 { throw UsageError("--max-image-pixels must be 0 (no limit) or more") }
        for pair in controls {
            guard let eq = pair.firstIndex(of: "=") else {
                throw UsageError("--control \(pair): write NAME=VALUE, e.g. --control brightness=140")
            }
            let name = String(pair[..<eq])
            guard V4L2Controls.id(named: name) != nil else {
                throw UsageError("unknown control '\(name)': known controls are \(V4L2Controls.table.map(\.name).joined(separator: ", "))")
            }
        }
        if queueDepth < 1 || queueDepth > 1000 { throw UsageError("--queue-depth must be from 1 to 1000") }
        if metricsInterval < 0 || metricsInterval > Self.maxSeconds || !metricsInterval.isFinite {
            throw UsageError("--metrics-interval must be 0 or more seconds, and at most 1e9")
        }
        if let duration, duration <= 0 || duration > Self.maxSeconds || !duration.isFinite {
            throw UsageError("--duration must be more than 0 seconds, and at most 1e9 (about 31 years)")
        }
        if let maxFrames, maxFrames == 0 { throw UsageError("--max-frames must be at least 1") }
        self.outputs = try RunOutput.destinations(outputs, environment: environment)
        if let field, field.isEmpty || field.contains(where: { $0.isWhitespace }) {
            throw UsageError("--field '\(field)': give the name of a result's data field, e.g. --field text (barcode)")
        }
        if [resultsOnly, events, field != nil].filter({ $0 }).count > 1 {
            throw UsageError("--results-only, --events and --field each choose what stdout gets: give one of them")
        }
        stdoutSelection = field.map { .field($0) } ?? (resultsOnly ? .results : events ? .events : .everything)
        if stdoutSelection != .everything && !self.outputs.contains(.stdout) {
            throw UsageError("--results-only, --events and --field choose what stdout gets: add --output - (files and brokers get every line, or what their own events= picks)")
        }
        self.plugins = plugins
        self.inputs = specs
        self.format = format
        self.pixelFormat = pixelFormat
        self.controls = controls
        self.reconnect = reconnect
        self.rtspTransport = rtspTransport
        self.openTimeout = openTimeout
        self.maxImagePixels = maxImagePixels
        self.queueDepth = queueDepth
        self.backpressure = backpressure
        self.isolation = isolation
        self.oneshot = oneshot
        self.maxFrames = maxFrames
        self.duration = duration
        self.metricsInterval = metricsInterval
        self.stdinCommands = stdinCommands
        self.verbose = verbose
        self.quiet = quiet
        self.liveView = liveView
    }
}
