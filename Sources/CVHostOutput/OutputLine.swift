/// One JSON line on its way to the sinks: its bytes (ending in "\n"), and the envelope's event,
/// source and plugin, which the MQTT sink makes its topic of, so that no sink parses a line again.
public struct OutputLine: Sendable {
    public let bytes: [UInt8]
    public let route: Route
    /// The frame the line is about (the envelope's `seq`), if any: the live view draws a frame's
    /// results over that frame.
    public let sequence: UInt64?

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

    public init(bytes: [UInt8], route: Route, sequence: UInt64? = nil) {
        self.bytes = bytes
        self.route = route
        self.sequence = sequence
    }
}
