import CVHostCore
import CVHostLines
import Histogram

/// The `metrics` line of one `--plugin` on one input (schema: event "metrics").
enum PluginMetricsEvent {
    /// What the line is made of, gathered by the runner.
    struct Inputs {
        let source: String
        let plugin: String
        let pluginIndex: Int
        let metrics: PluginMetrics.Snapshot
        let fps: Double?
        /// The seconds `fps` covers: since the previous metrics line (the final one: the whole run).
        let fpsIntervalSeconds: Double?
        let delivery: DeliveryStatistics
        let queueCapacity: Int
        let instances: Int
        let invalidResults: UInt64
        /// A call that has lasted long enough to be reported, and since when.
        let hung: PluginCall?
        /// isolation=process: the worker's state, pid, memory and restarts.
        let worker: JSONObject?
        let now: UInt64
    }

    static func make(_ i: Inputs, final: Bool) -> JSONObject {
        let m = i.metrics, stats = i.delivery
        var e = JSONObject.envelope(event: "metrics", source: i.source, plugin: i.plugin, pluginIndex: i.pluginIndex,
                                    seq: m.lastSequence, tsNs: HostClock.wallNs())
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
        e.set("invalid_results", i.invalidResults)
        var queue = JSONObject()
        queue.set("policy", stats.policy?.rawValue)
        queue.set("depth", stats.queueDepth)
        queue.set("max_depth", stats.maxQueueDepth)
        queue.set("capacity", i.queueCapacity)
        e.set("queue", object: queue)
        e.set("instances", i.instances)
        e.set("processing_ms", object: percentiles(m.processing))
        e.set("latency_ms", object: percentiles(m.latency))
        e.set("fps", i.fps, decimals: 2)
        e.set("interval_s", i.fpsIntervalSeconds, decimals: 3)
        if let c = i.hung {
            var h = JSONObject()
            h.set("callback", c.callback)
            h.set("seq", c.sequence)
            h.set("seconds", Double(i.now - c.sinceNs) / 1e9, decimals: 1)
            e.set("hung", object: h)
        } else {
            e.set("hung", nil as String?)
        }
        if let w = i.worker { e.set("worker", object: w) } else { e.set("worker", nil as String?) }
        return e
    }

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
}
