import CVHostCore
import Foundation
import CVHostPluginABI
import Histogram
import Synchronization

/// Runs one `--plugin` on one input: its instances, its video data output (delivery queue
/// and connection), its metrics, and the ordering and writing of its results. A run with
/// several inputs has a runner per input and plugin.
public final class PluginRunner: VideoDataOutputDelegate, @unchecked Sendable {
    // @unchecked Sendable: `instances` is fixed after init and each instance is used by one
    // worker; the rest is immutable or behind a Mutex.

    public let plugin: LoadedPlugin
    /// The input this runner serves: the `source` of its lines.
    public let source: String
    /// The position of this `--plugin` on the command line, 0-based: tells apart two runs of one plugin.
    public let index: Int
    /// The output that feeds this plugin; add it to the session.
    public let output: VideoDataOutput
    public var instanceCount: Int { instances.count }
    /// The options as the plugin received them (every declared option, defaults filled in).
    public let resolvedOptions: [(String, String)]

    private let instances: [PluginInstance]
    private let metrics = PluginMetrics()
    private let sequencer: ResultSequencer
    private let writer: JSONLineWriter
    private let finishing = Mutex<(workers: Int, lines: [[UInt8]])>((0, []))
    private let lastReport = Mutex<(ns: UInt64, processed: UInt64)>((0, 0))
    private let failureLogs = Atomic<UInt64>(0)
    /// Gives each runner its own cvhost_host.instance_group.
    private static let groups = Atomic<UInt64>(0)

    /// Creates the plugin's instances and its output.
    /// - Parameters:
    ///   - source: the input's id, written in every line; `logPrefix`: put before the plugin's
    ///     name in log messages (the source, when a run has several).
    ///   - options: what the user wrote after `NAME:`, host options (instances, queue_depth,
    ///     backpressure, max_fps, mirror, rotate) included.
    ///   - queueDepth, backpressure: the session-wide defaults (`--queue-depth`, `--backpressure`).
    /// - Throws: `PluginLoadError` (.unknownOption, .badOptionValue, .createFailed).
    public init(plugin: LoadedPlugin, source: String, logPrefix: String? = nil, index: Int, options: [(key: String, value: String)], queueDepth: Int,
                backpressure: BackpressurePolicy?, writer: JSONLineWriter) throws {
        self.plugin = plugin
        self.source = source
        self.index = index
        self.writer = writer
        sequencer = ResultSequencer(write: { [writer] line in writer.writeLine(line) })

        var given: [String: String] = [:]
        for (key, value) in options {
            guard plugin.options.contains(where: { $0.name == key }) || LoadedPlugin.hostOptions.contains(where: { $0.name == key })
            else {
                let known = (plugin.options + LoadedPlugin.hostOptions).map(\.name).joined(separator: ", ")
                throw PluginLoadError(.unknownOption, "plugin \(plugin.name) has no option '\(key)': its options are \(known)")
            }
            given[key] = value
        }
        func hostValue(_ name: String) throws -> String? {
            guard let v = given[name] else { return nil }
            return try LoadedPlugin.hostOptions.first { $0.name == name }!.normalize(v, plugin: plugin.name)
        }
        // instances=auto: one per core the process may use.
        let count = given["instances"]?.lowercased() == "auto"
            ? max(1, min(64, ProcessInfo.processInfo.activeProcessorCount))
            : try hostValue("instances").flatMap { Int($0) } ?? 1
        if count > 1 && !plugin.isStateless {
            Log.warning("plugin \(plugin.name) keeps state between frames; with instances=\(count) each instance sees only some frames",
                        source: [logPrefix, plugin.name].compactMap { $0 }.joined(separator: " "))
        }
        resolvedOptions = try plugin.options.map { spec in
            (spec.name, try spec.normalize(given[spec.name] ?? spec.defaultValue, plugin: plugin.name))
        }

        let name = index == 0 ? plugin.name : "\(plugin.name)#\(index)"
        let label = [logPrefix, name].compactMap { $0 }.joined(separator: " ")
        output = VideoDataOutput(label: label)
        output.acceptedPixelFormats = plugin.pixelFormats
        output.captureHints = plugin.hints
        output.workerCount = count
        output.maxQueuedFrames = try hostValue("queue_depth").flatMap { Int($0) } ?? queueDepth
        output.backpressure = try hostValue("backpressure").flatMap { BackpressurePolicy(rawValue: $0) } ?? backpressure
        if let fps = try hostValue("max_fps").flatMap({ Double($0) }), fps > 0 {
            output.connection.videoMinFrameDuration = 1 / fps
        }
        output.connection.isVideoMirrored = try hostValue("mirror") == "true"
        output.connection.videoRotationAngle = try hostValue("rotate").flatMap { Int($0) } ?? 0

        let group = PluginRunner.groups.add(1, ordering: .relaxed).newValue
        var made: [PluginInstance] = []
        do {
            for worker in 0..<count {
                let services = HostServices(source: source, pluginName: plugin.name, pluginIndex: index,
                                            logSource: count == 1 ? label : "\(label) instance \(worker)",
                                            instance: worker, instanceCount: count, group: group)
                made.append(try PluginInstance(plugin: plugin, options: resolvedOptions, services: services))
            }
        } catch {
            made.forEach { $0.destroy() }
            throw error
        }
        instances = made
        output.setSampleBufferDelegate(self)
    }

    /// Destroys every instance. Call once, after the session stopped.
    public func shutdown() {
        instances.forEach { $0.destroy() }
    }

    // MARK: - VideoDataOutputDelegate

    public func videoDataOutput(_ output: VideoDataOutput, didOutput sample: SampleBuffer, pixelBuffer: PixelBuffer,
                                context: DeliveryContext) {
        let instance = instances[context.worker]
        var frame = PluginRunner.cFrame(sample, pixelBuffer)
        frame.delivery_index = context.ticket
        let start = HostClock.monotonicNs()
        let (rc, lines) = withExtendedLifetime(pixelBuffer) { instance.process(&frame, stamp: HostServices.FrameStamp(sample)) }
        let end = HostClock.monotonicNs()
        metrics.record(sequence: sample.sequence, ok: rc == 0, processingNs: end - start,
                       latencyNs: end &- sample.monotonicCaptureNs, results: lines.count, endNs: end)
        if rc != 0 {
            let n = failureLogs.add(1, ordering: .relaxed).newValue
            if n <= 5 || n % 1000 == 0 {
                Log.warning("process() failed on frame \(sample.sequence) with \(errnoName(rc)) (\(n) failures so far)",
                            source: output.label)
            }
        }
        sequencer.submit(ticket: context.ticket, lines: lines)
    }

    public func videoDataOutput(_ output: VideoDataOutput, didDrop sample: SampleBuffer, reason: DropReason) {
        // Counted by the output itself (DeliveryStatistics.dropped); nothing more to do here.
    }

    public func videoDataOutputDidFinish(_ output: VideoDataOutput, worker: Int) {
        let instance = instances[worker]
        let (rc, lines) = instance.flush()
        if rc != 0 { Log.warning("flush() failed with \(errnoName(rc))", source: output.label) }
        metrics.addResults(lines.count)
        // Flush results come after every frame's results: hold them until the last worker ends,
        // when every ticket has been written.
        let release: [[UInt8]]? = finishing.withLock { state in
            state.workers += 1
            state.lines += lines
            return state.workers == instances.count ? state.lines : nil
        }
        release?.forEach { writer.writeLine($0) }
    }

    // MARK: - Metrics

    /// The plugin's `metrics` event. Percentiles are over the whole run; `fps` is over the time
    /// since the previous report (for the final report: over the whole run).
    public func metricsEvent(final: Bool) -> JSONObject {
        let m = metrics.snapshot
        let stats = output.statistics
        let now = HostClock.monotonicNs()
        let fps: Double? = lastReport.withLock { last in
            defer { last = (now, m.processed + m.failed) }
            if final {
                guard let first = m.firstProcessedNs, let lastNs = m.lastProcessedNs, lastNs > first else { return nil }
                return Double(m.processed + m.failed - 1) / (Double(lastNs - first) / 1e9)
            }
            let since = last.ns == 0 ? m.firstProcessedNs ?? now : last.ns
            guard now > since else { return nil }
            return Double(m.processed + m.failed - last.processed) / (Double(now - since) / 1e9)
        }
        var e = JSONObject.envelope(event: "metrics", source: source, plugin: plugin.name, pluginIndex: index, seq: m.lastSequence,
                                    tsNs: HostClock.wallNs())
        e.set("final", final)
        var frames = JSONObject()
        frames.set("offered", stats.offered)
        frames.set("delivered", stats.delivered)
        frames.set("processed", m.processed)
        frames.set("failed", m.failed)
        var dropped = JSONObject()
        for reason in DropReason.allCases { dropped.set(reason.rawValue, stats.dropped[reason] ?? 0) }
        frames.set("dropped", object: dropped)
        frames.set("dropped_total", stats.droppedTotal)
        e.set("frames", object: frames)
        e.set("results", m.results)
        e.set("invalid_results", instances.reduce(UInt64(0)) { $0 + $1.services.invalidResults })
        var queue = JSONObject()
        queue.set("policy", stats.policy?.rawValue)
        queue.set("depth", stats.queueDepth)
        queue.set("max_depth", stats.maxQueueDepth)
        queue.set("capacity", output.maxQueuedFrames)
        e.set("queue", object: queue)
        e.set("instances", instances.count)
        e.set("processing_ms", object: PluginRunner.percentiles(m.processing))
        e.set("latency_ms", object: PluginRunner.percentiles(m.latency))
        e.set("fps", fps, decimals: 2)
        if let c = hungCall(now: now) {
            var h = JSONObject()
            h.set("callback", c.callback)
            h.set("seq", c.sequence)
            h.set("seconds", Double(now - c.sinceNs) / 1e9, decimals: 1)
            e.set("hung", object: h)
        } else {
            e.set("hung", nil as String?)
        }
        return e
    }

    /// A call into one of the plugin's instances that has lasted `hangSeconds` or more by `now`
    /// (the longest, when several have).
    public func hungCall(now: UInt64 = HostClock.monotonicNs()) -> PluginCall? {
        instances.compactMap(\.currentCall)
            .filter { now > $0.sinceNs && Double(now - $0.sinceNs) / 1e9 >= PluginRunner.hangSeconds }
            .min { $0.sinceNs < $1.sinceNs }
    }

    /// A call into a plugin lasting this long is reported as hung in its metrics (`hung`).
    public static let hangSeconds = 1.0

    static func percentiles(_ h: Histogram<UInt64>) -> JSONObject {
        var o = JSONObject()
        let empty = h.totalCount == 0
        o.set("p50", empty ? nil : Double(h.valueAtPercentile(50)) / 1000)
        o.set("p95", empty ? nil : Double(h.valueAtPercentile(95)) / 1000)
        o.set("p99", empty ? nil : Double(h.valueAtPercentile(99)) / 1000)
        o.set("max", empty ? nil : Double(h.max) / 1000)
        o.set("mean", empty ? nil : h.mean / 1000)
        return o
    }

    // MARK: - The C frame

    static func cFrame(_ sample: SampleBuffer, _ pb: PixelBuffer) -> cvhost_frame {
        var f = cvhost_frame()
        f.struct_size = UInt32(MemoryLayout<cvhost_frame>.size)
        f.pixel_format = pb.format.rawValue
        f.width = UInt32(pb.width)
        f.height = UInt32(pb.height)
        f.sequence = sample.sequence
        f.capture_time_ns = sample.captureTimeNs
        f.presentation_time_ns = sample.presentationTimeNs
        f.plane_count = UInt32(pb.planes.count)
        f.flags = sample.isIndependent ? UInt32(CVHOST_FRAME_FLAG_INDEPENDENT) : 0
        f.color_range = pb.colorimetry.range.rawValue
        f.color_matrix = pb.format.isRGB ? CVHOST_COLOR_MATRIX_NONE.rawValue : pb.colorimetry.matrix.rawValue
        withUnsafeMutableBytes(of: &f.planes) { raw in
            let planes = raw.bindMemory(to: cvhost_plane.self)
            for (i, p) in pb.planes.prefix(4).enumerated() {
                planes[i] = cvhost_plane(data: p.base.assumingMemoryBound(to: UInt8.self), stride: UInt32(p.bytesPerRow),
                                         width: UInt32(p.samplesPerRow), height: UInt32(p.rows))
            }
        }
        return f
    }
}
