import CVHostCore
import CVHostLines

/// A plugin's metrics for a Prometheus scrape (`GET /metrics`): the same counters as its
/// `metrics` line, read without disturbing that line's per-interval `fps`. Labels: source,
/// plugin, plugin_index. Names follow Prometheus' conventions: `cvhost_plugin_` prefix, base
/// units (seconds), counters ending in `_total`.
extension PluginRunner {
    public func expose(into p: inout PrometheusExposition) {
        let m = metrics.snapshot
        let d = output.statistics
        let l = [("source", source), ("plugin", plugin.name), ("plugin_index", String(index))]
        p.counter("cvhost_plugin_frames_offered_total", "Frames the input offered to the plugin's queue.", l, d.offered)
        p.counter("cvhost_plugin_frames_delivered_total", "Frames taken from the queue for the plugin.", l, d.delivered)
        p.counter("cvhost_plugin_frames_processed_total", "Frames the plugin's process() returned success for.", l, m.processed)
        p.counter("cvhost_plugin_frames_failed_total", "Frames the plugin's process() failed on.", l, m.failed)
        for reason in DropReason.allCases {
            p.counter("cvhost_plugin_frames_dropped_total", "Frames not processed, by reason (late, frame_rate_cap, restarting, quarantined, no_motion).",
                      l + [("reason", reason.rawValue)], d.dropped[reason] ?? 0)
        }
        p.counter("cvhost_plugin_results_total", "Results the plugin emitted that were written.", l, m.results)
        p.counter("cvhost_plugin_invalid_results_total", "Results refused for not being a valid JSON object.", l, instances.invalidResults)
        p.gauge("cvhost_plugin_queue_depth", "Frames waiting for the plugin now.", l, Double(d.queueDepth))
        p.gauge("cvhost_plugin_queue_capacity", "Frames that may wait for the plugin.", l, Double(output.maxQueuedFrames))
        p.gauge("cvhost_plugin_instances", "Instances of the plugin (threads or worker processes).", l, Double(instances.count))
        p.gauge("cvhost_plugin_enabled", "1 while the plugin's connection lets frames through, 0 while paused.", l,
                output.connection.isEnabled ? 1 : 0)
        p.gauge("cvhost_plugin_hung_seconds", "How long the plugin's longest call in progress has lasted, once past 1 s; else 0.", l,
                hungCall().map { Double(HostClock.monotonicNs() - $0.sinceNs) / 1e9 } ?? 0)
        p.histogram("cvhost_plugin_processing_seconds", "Time in the plugin's process() per frame.", l, microseconds: m.processing)
        p.histogram("cvhost_plugin_latency_seconds", "From a frame's capture to the end of its processing (its results written).", l,
                    microseconds: m.latency)
    }
}
