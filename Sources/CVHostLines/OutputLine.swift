import CVHostCore

/// One JSON line on its way to the sinks: its bytes (ending in "\n"), and the envelope's event,
/// source and plugin, which the MQTT sink makes its topic of, so that no sink parses a line again.
public struct OutputLine: Sendable {
    public let bytes: [UInt8]
    public let route: Route
    /// The frame the line is about (the envelope's `seq`), if any: the live view draws a frame's
    /// results over that frame.
    public let sequence: UInt64?
    /// The envelope's `event_id`: a broker's message id (NATS JetStream drops a resend by it).
    public let eventID: String?
    /// When the line was made (monotonic clock, ns): a broker output's delivery latency is from here.
    public let createdNs: UInt64

    public struct Route: Sendable, Hashable {
        /// The event type: "result", "metrics", "session.started", ...
        public let event: String
        /// The input's id; nil for lines of no input (a camera plugged in, `cvhost devices`).
        public let source: String?
        /// The plugin's name; nil for session events.
        public let plugin: String?

        public init(event: String, source: String?, plugin: String?) {
            self.event = event
            self.source = source
            self.plugin = plugin
        }
    }

    public init(bytes: [UInt8], route: Route, sequence: UInt64? = nil, eventID: String? = nil, createdNs: UInt64 = HostClock.monotonicNs()) {
        self.bytes = bytes
        self.route = route
        self.sequence = sequence
        self.eventID = eventID
        self.createdNs = createdNs
    }

    /// The same line with other bytes (a field added to it).
    public func with(bytes: [UInt8]) -> OutputLine {
        OutputLine(bytes: bytes, route: route, sequence: sequence, eventID: eventID, createdNs: createdNs)
    }
}
