import CVHostLines
/// One connection of a broker sink to its broker (MQTT, Kafka, NATS JetStream): what `BrokerSink`
/// needs of a client library to deliver lines at least once. Made, used and dropped by the sink's
/// thread alone; a connection that is lost is not mended in place: the sink makes a new one and
/// publishes what was in flight again.
protocol BrokerConnection: AnyObject {
    /// A descriptor that becomes readable when the connection has news (a socket, or a pipe the
    /// library writes to); the sink sleeps in poll(2) on it and on its queue.
    var descriptor: Int32 { get }
    /// Whether to wake when `descriptor` is writable too (bytes wait to be written).
    var wantsWrite: Bool { get }
    /// Whether lines may be published now.
    var canPublish: Bool { get }
    /// Whether the broker is reachable now (said as `output.connected` / `output.disconnected`).
    var isUp: Bool { get }
    /// Why not, when it is not.
    var downReason: String? { get }
    /// Publishes one line (its payload: the line without its newline).
    func publish(_ line: OutputLine) -> PublishOutcome
    /// Does what is due after a wait: reads, writes, keep-alive, delivery reports.
    /// - Returns: why the connection is lost (the sink makes a new one), or nil.
    func service(readable: Bool, writable: Bool) -> String?
    /// What the broker said of the lines since the last call.
    func takeSettled() -> SettledLines
    /// Said once each time the connection comes up (MQTT's retained `online`).
    func cameUp()
    /// The end of the run: says goodbye as the protocol wants, sends what it can until `untilNs`, disconnects.
    func close(untilNs: UInt64)
}

extension BrokerConnection {
    var downReason: String? { nil }
}

/// The ids of lines a broker acknowledged, of lines it could not take now (to send again), and of
/// lines it refused for good (dropped, counted as rejected), with why each distinct failure happened.
struct SettledLines {
    var acknowledged: [Int64] = []
    var failed: [Int64] = []
    var refused: [Int64] = []
    /// Why lines failed or were refused: each distinct reason once, in the order seen.
    var failures: [String] = []
}

enum PublishOutcome {
    /// Handed to the connection; its acknowledgement will name `id`.
    case published(id: Int64)
    /// The broker or its client refuses this line for good (too large, a topic it does not take,
    /// an unknown topic, no authorisation): dropped and counted (rejected), never sent again.
    case refused(String)
    /// Not now (the connection is going, or the library's buffer is full): it is published later, first.
    case notNow
}

