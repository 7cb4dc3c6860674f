import CVHostCore
import CVHostLines
import CVHostPluginABI
import Synchronization

/// Runs one `--plugin` on one input: its output (delivery queue and connection) feeds its
/// instances, whose results it puts in frame order and writes, and it counts what happened.
/// A run with several inputs has a runner per input and plugin. The parts have their own homes:
/// options (PluginConfiguration), the output (PluginOutput), the instances (PluginInstances),
/// the C frame (CFrame), the metrics line (PluginMetricsEvent).
public final class PluginRunner: VideoDataOutputDelegate, @unchecked Sendable {
    // @unchecked Sendable: everything is immutable after init or behind a lock/Atomic.

    public let plugin: PluginInfo
    /// The input this runner serves: the `source` of its lines.
    public let source: String
    /// The position of this `--plugin` on the command line, 0-based: tells apart two runs of one plugin.
    public let index: Int
    /// The output that feeds this plugin; add it to the session.
    public let output: VideoDataOutput
    public let configuration: PluginConfiguration
    public var instanceCount: Int { instances.count }
    /// The options as the plugin received them (every declared option, defaults filled in).
    public var resolvedOptions: [(String, String)] { configuration.pluginOptions }
    /// The plugin runs in a worker process of its own.
    public var isIsolated: Bool { instances.isolated }
    /// The plugin was given up on after repeated crashes: the run went on without it.
    public var isQuarantined: Bool { instances.isQuarantined }
    /// Results written so far (the metrics' `results`).
    public var resultCount: UInt64 { metrics.snapshot.results }
    /// Every frame given to process() failed (at least one was).
    public var failedEveryFrame: Bool {
        let m = metrics.snapshot
        return m.failed > 0 && m.processed == 0
    }

    let instances: PluginInstances
    let metrics = PluginMetrics()
    private let sequencer: ResultSequencer
    /// For the ordered stage: the instances' ordered() calls in frame order.
    private let turns = OrderedTurns()
    let sink: OutputSink
    private let finishing = Locked<(workers: Int, lines: [OutputLine])>((0, []))
    private let failures: RepeatedWarning
    /// Where each frame's results go once in frame order: the run's stages, then the sink.
    private let after: RunnerStages

    /// The rooms each frame's results are handed to (`FrameResults`: the frame, its results, the
    /// frames passed over before it), in the order they were added, before they are written.
    public var stages: [FrameStage] { after.stages }

    /// Adds a room after those there: it is handed each frame the plugin processes, with its
    /// results (the evidence room, the live view). Before the session starts.
    public func subscribe(_ stage: FrameStage) {
        after.add(stage)
    }

    /// Creates the plugin's instances and its output.
    /// - Parameters:
    ///   - source: the input's id, written in every line; `logPrefix`: put before the plugin's
    ///     name in log messages (the source, when a run has several).
    ///   - options: what the user wrote after `NAME:`, host options included (PluginConfiguration).
    ///   - queueDepth, backpressure: the session-wide defaults (`--queue-depth`, `--backpressure`).
    /// - Throws: `PluginLoadError` (.unknownOption, .badOptionValue, .createFailed, .notSharedObject).
    ///   - isolation: the run-wide default (`--isolation`), for a plugin whose options do not say.
    ///   - stage: the first room each frame's results go through before they are written (the analytics), if any.
    ///   - shared: the plugin's instances that every input shares (`share`), instead of instances of its own.
    public init(plugin: PluginInfo, source: String, logPrefix: String? = nil, index: Int, options: [(key: String, value: String)], queueDepth: Int,
                backpressure: BackpressurePolicy?, isolation: PluginIsolation = .none, sink: OutputSink,
                stage: FrameStage? = nil, shared: SharedInstances? = nil) throws {
        self.plugin = plugin
        self.source = source
        self.index = index
        self.sink = sink
        let after = RunnerStages(first: stage, sink: sink)
        self.after = after
        sequencer = ResultSequencer(write: { lines, frame, succeeded in after.write(lines, frame: frame, succeeded: succeeded) })
        let name = index == 0 ? plugin.name : "\(plugin.name)#\(index)"
        let label = [logPrefix, name].compactMap { $0 }.joined(separator: " ")
        configuration = try PluginConfiguration(plugin: plugin, options: options, isolation: isolation, warn: {
            Log.warning($0, source: [logPrefix, plugin.name].compactMap { $0 }.joined(separator: " "))
        })
        output = VideoDataOutput(plugin: plugin, configuration: configuration, label: label, queueDepth: queueDepth,
                                 backpressure: backpressure)
        failures = RepeatedWarning(source: label)
        instances = try shared?.lane()
            ?? makeInstances(plugin: plugin, configuration: configuration, source: source, index: index, label: label,
                             report: { [sink] in sink.write($0) })
        // Frames of the plugin's own size and format, when its instances asked for them in create().
        if let request = instances.frameRequest {
            output.scaling = request.scaling
            output.deliversFullFrame = request.fullFrame
            output.deliversRegions = request.motionRegions
            if let format = request.pixelFormat { output.acceptedPixelFormats = [format] }
        }
        output.setSampleBufferDelegate(self)
    }

    /// Destroys every instance. Call once, after the session stopped.
    public func shutdown() {
        instances.shutdown()
    }

    // MARK: - VideoDataOutputDelegate

    public func videoDataOutput(_ output: VideoDataOutput, didOutput sample: SampleBuffer, pixelBuffer: PixelBuffer,
                                context: DeliveryContext) {
        let captured = sample.pixelBuffer
        let placement = output.content(sourceWidth: captured.width, sourceHeight: captured.height, format: captured.format)
        var frame = cvhost_frame(sample, pixelBuffer, deliveryIndex: context.ticket, placement: placement)
        let start = HostClock.monotonicNs()
        let stamp = HostServices.FrameStamp(sample)
        // `frame` points into `pixelBuffer`, which the calls hold; and to the full frame, when asked
        // for (ABI 2.3), which points into `full` (held here) and lives for the process() call.
        let full = output.fullPixels(for: sample)
        var fullFrame = full.map { p in
            cvhost_frame(sample, p, deliveryIndex: context.ticket, placement: (.whole(width: p.width, height: p.height), p.width, p.height))
        } ?? cvhost_frame()
        // And its motion regions (ABI 2.4), when it asked for them and is gated on motion.
        let regions = output.regions(for: sample).map { cvhost_region(x: UInt32($0.x), y: UInt32($0.y), width: UInt32($0.width), height: UInt32($0.height)) }
        var outcome = withUnsafePointer(to: &fullFrame) { p -> PluginCallOutcome in
            regions.withUnsafeBufferPointer { r in
                frame.full = full == nil ? nil : p
                frame.region_count = UInt32(r.count)
                frame.regions = r.isEmpty ? nil : r.baseAddress
                defer { (frame.full, frame.region_count, frame.regions) = (nil, 0, nil) }
                return instances.process(lane: context.worker, frame: &frame, pixels: pixelBuffer, full: full, stamp: stamp, source: source)
            }
        }
        if plugin.hasOrderedStage {
            outcome = turns.take(context.ticket) {
                // Only a frame the plugin processed (well or not) goes on to the ordered stage.
                guard case .returned(let status, let lines) = outcome else { return outcome }
                switch instances.ordered(lane: context.worker, frame: &frame, pixels: pixelBuffer, stamp: stamp) {
                case .returned(let orderedStatus, let more): return .returned(status: status != 0 ? status : orderedStatus, lines: lines + more)
                case .dropped(let reason): return .dropped(reason)
                case .crashed: return .crashed
                }
            }
        }
        let end = HostClock.monotonicNs()
        if FrameTrace.enabled {
            FrameTrace.mark(ptsNs: sample.presentationTimeNs, "process_start", atNs: start)
            FrameTrace.mark(ptsNs: sample.presentationTimeNs, "process_end", atNs: end)
        }
        var lines: [OutputLine] = []
        switch outcome {
        case .dropped(let reason):
            output.countDrop(reason)
        case .returned(let status, let emitted):
            lines = emitted
            if status != 0 {
                // A Python plugin's failure is an exception, whose traceback the worker has said.
                let how = plugin.runtime == .python ? "raised an exception" : "failed with \(errnoName(status))"
                failures.record { "process() \(how) on frame \(sample.sequence) (\($0) failures so far)" }
            }
            fallthrough
        case .crashed:
            // Made, well or not; a crash is a failed frame (the instances told of the crash itself).
            metrics.record(sequence: sample.sequence, ok: outcome.succeeded, processingNs: end - start,
                           latencyNs: end &- sample.monotonicCaptureNs, results: lines.count, endNs: end)
            if let image = stamp.imagePath {
                lines.append(ImageScanReport.line(image: image, stamp: stamp, source: source, plugin: plugin.name, pluginIndex: index,
                                                  results: lines.count, failed: !outcome.succeeded))
            }
        }
        sequencer.submit(ticket: context.ticket, lines: lines,
                         frame: ProcessedFrame(sample, width: placement.sourceWidth, height: placement.sourceHeight,
                                               orientation: output.connection.videoOrientation), succeeded: outcome.succeeded)
    }

    public func videoDataOutput(_ output: VideoDataOutput, didDrop sample: SampleBuffer, reason: DropReason) {
        // Counted by the output itself (DeliveryStatistics.dropped). A frame passed over by the
        // frame-rate cap, or for want of motion, is still a frame of the input for the stages
        // (tracks placed in it, their events' snapshots of it; a still one holds the tracks).
        guard reason == .frameRateCap || reason == .noMotion else { return }
        let captured = sample.pixelBuffer
        let placement = output.content(sourceWidth: captured.width, sourceHeight: captured.height, format: captured.format)
        after.passedOver(sample, width: placement.sourceWidth, height: placement.sourceHeight, orientation: output.connection.videoOrientation)
    }

    public func videoDataOutputDidFinish(_ output: VideoDataOutput, worker: Int) {
        var lines: [OutputLine] = []
        if case .returned(let status, let flushed) = instances.flush(lane: worker) {
            if status != 0 { Log.warning("flush() failed with \(errnoName(status))", source: output.label) }
            lines = flushed
        }
        metrics.addResults(lines.count)
        // Flush results come after every frame's results: hold them until the last worker ends,
        // when every ticket has been written.
        var release: [OutputLine]? = finishing.withLock { state in
            state.workers += 1
            state.lines += lines
            return state.workers == instances.count ? state.lines : nil
        }
        // The last worker to finish flushes the shared stage, after every instance's flush.
        if release != nil, plugin.hasOrderedStage, case .returned(let status, let shared) = instances.flushShared() {
            if status != 0 { Log.warning("shared_flush() failed with \(errnoName(status))", source: output.label) }
            metrics.addResults(shared.count)
            release! += shared
        }
        release?.forEach { sink.write($0) }
        // After the input's last frame and its flush: what the stages still have open.
        if release != nil { after.finish() }
    }

    // MARK: - Metrics

    /// The plugin's `metrics` line. Percentiles are over the whole run; `fps` is over the time
    /// since the previous report (for the final report: over the whole run), `interval_s` long.
    public func metricsEvent(final: Bool) -> JSONObject {
        let m = metrics.snapshot
        let now = HostClock.monotonicNs()
        let rate = metrics.fps(of: m, final: final, now: now)
        return PluginMetricsEvent.make(
            .init(source: source, plugin: plugin.name, pluginIndex: index, metrics: m, fps: rate.fps, fpsIntervalSeconds: rate.intervalSeconds,
                  delivery: output.statistics, queueCapacity: output.maxQueuedFrames, instances: instances.count,
                  invalidResults: instances.invalidResults, hung: hungCall(now: now), worker: instances.workerMetrics, now: now),
            final: final)
    }

    /// A call into one of the plugin's instances that has lasted `hangSeconds` or more by `now`
    /// (the longest, when several have).
    public func hungCall(now: UInt64 = HostClock.monotonicNs()) -> PluginCall? {
        instances.currentCalls
            .filter { now > $0.sinceNs && Double(now - $0.sinceNs) / 1e9 >= PluginRunner.hangSeconds }
            .min { $0.sinceNs < $1.sinceNs }
    }

    /// A call into a plugin lasting this long is reported as hung in its metrics (`hung`).
    public static let hangSeconds = 1.0
}
