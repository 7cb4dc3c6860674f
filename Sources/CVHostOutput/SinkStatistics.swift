/// Why a line did not reach a sink. Every such line is counted: there is no silent loss.
public enum OutputDropReason: String, Sendable, CaseIterable {
    /// The sink's queue was full (the broker or the disk could not keep up, or was away): the
    /// oldest waiting line made room.
    case queueFull = "queue_full"
    /// The sink refused the line (larger than the broker accepts).
    case rejected
    /// Writing it failed (a full disk).
    case writeFailed = "write_failed"
    /// Still waiting when the run ended and the sink had to be given up (the broker was away).
    case unsent
}

/// What became of the lines handed to one sink: the `output` section of the metrics lines.
public struct SinkStatistics: Sendable {
    /// The destination's name (never a password).
    public var output: String
    /// Lines written (stdout, file) or acknowledged by the broker (QoS 1, 2; sent, for QoS 0).
    public var delivered: UInt64 = 0
    /// Lines waiting in the sink's queue or in flight.
    public var queued = 0
    public var dropped: [OutputDropReason: UInt64] = [:]
    /// Whether the sink is connected (MQTT); nil for sinks that are not a connection.
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
        var d = JSONObject()
        for reason in OutputDropReason.allCases { d.set(reason.rawValue, dropped[reason] ?? 0) }
        o.set("dropped", object: d)
        return o
    }
}
