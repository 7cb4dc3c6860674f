import CVHostLines
import Histogram

/// Why a line did not reach a sink. Every such line is counted: there is no silent loss.
public enum OutputDropReason: String, Sendable, CaseIterable {
    /// The sink's queue was full (the broker or the disk could not keep up, or was away): the
    /// oldest waiting line made room.
    case queueFull = "queue_full"
    /// The sink refused the line (larger than the broker accepts).
    case rejected
    /// Writing it failed (a full disk).
    case writeFailed = "write_failed"
    /// Still waiting when the run ended and the sink had to be given up (the broker was away, and
    /// the output has no spool: lines left in a spool are kept for the next run, not lost).
    case unsent
    /// The output's spool was full (the broker away for longer than it holds): the newest lines were not kept.
    case spoolFull = "spool_full"
    /// A stretch of the output's spool was damaged on disk (at least one line each): skipped to the next whole line.
    case spoolDamaged = "spool_damaged"
}

/// What became of the lines handed to one sink: the `output` section of the metrics lines.
public struct SinkStatistics: Sendable {
    /// The destination's name (never a password).
    public var output: String
    /// Lines written (stdout, file) or acknowledged by the broker (QoS 1, 2; sent, for QoS 0).
    public var delivered: UInt64 = 0
    /// Lines waiting in the sink's queue or spool, or in flight.
    public var queued = 0
    /// Lines in the output's spool not yet known to be delivered (nil: no spool).
    public var spooled: Int?
    /// The folder of the output's spool (nil: no spool).
    public var spoolFolder: String?
    /// Lines published again: after a lost connection or a failed delivery, or left by an earlier run in the spool.
    public var resent: UInt64 = 0
    /// Deliveries the broker reported as failed (each line is sent again).
    public var failed: UInt64 = 0
    /// A broker output with a spool: lines its disk refused (full, failing), sent from memory (nil: no spool).
    public var unspooled: UInt64?
    /// A broker output: from a line's making to the broker's acknowledgement, µs (nil: not a broker).
    public var latency: Histogram<UInt64>?
    public var dropped: [OutputDropReason: UInt64] = [:]
    /// Whether the sink's broker is reachable (MQTT, Kafka, NATS); nil for sinks that are not a connection.
    public var connected: Bool?

    public init(output: String) {
        self.output = output
    }

    public var totalDropped: UInt64 { dropped.values.reduce(0, +) }

    public var json: JSONObject {
        var o = JSONObject()
        o.set("output", output)
        o.set("connected", connected)
        o.set("delivered", delivered)
        o.set("queued", queued)
        if let spooled { o.set("spooled", spooled) }
        if let unspooled { o.set("unspooled", unspooled) }
        if connected != nil {
            o.set("resent", resent)
            o.set("failed", failed)
            if let latency, latency.totalCount > 0 {
                var l = JSONObject()
                l.set("p50", Double(latency.valueAtPercentile(50)) / 1000)
                l.set("p99", Double(latency.valueAtPercentile(99)) / 1000)
                l.set("max", Double(latency.max) / 1000)
                o.set("latency_ms", object: l)
            } else {
                o.set("latency_ms", nil as String?)
            }
        }
        var d = JSONObject()
        for reason in OutputDropReason.allCases { d.set(reason.rawValue, dropped[reason] ?? 0) }
        o.set("dropped", object: d)
        return o
    }
}
