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
    /// The envelope's `pts` in ns (the frame's media time), if any.
    public let ptsNs: Int64?
    /// The track the line is about: a tracked result's `track_id`, an analytics event's; and the
    /// label it is of (a result's, else its type; an analytics event's track's).
    public let track: Int?
    public let label: String?
    /// When the line was made (monotonic clock, ns): a broker output's delivery latency is from here.
    public let createdNs: UInt64
    /// For a plugin's `result` line: what the analytics read of it, and where its data starts.
    public let result: Result?

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

    /// A result line's fields (as JSONValidator noted them) and the offset in `bytes` of its data's
    /// first member (just past `"data":{`).
    public struct Result: Sendable {
        /// The result's type (a box's label when it has none).
        public let type: String
        public let fields: ResultFields
        public let dataStart: Int

        public init(type: String, fields: ResultFields, dataStart: Int) {
            self.type = type
            self.fields = fields
            self.dataStart = dataStart
        }
    }

    public init(bytes: [UInt8], route: Route, sequence: UInt64? = nil, eventID: String? = nil, ptsNs: Int64? = nil, track: Int? = nil,
                label: String? = nil, createdNs: UInt64 = HostClock.monotonicNs(), result: Result? = nil) {
        self.bytes = bytes
        self.route = route
        self.sequence = sequence
        self.eventID = eventID
        self.ptsNs = ptsNs
        self.track = track
        self.label = label
        self.createdNs = createdNs
        self.result = result
    }

    /// The same line with other bytes (a field added to it): no longer a result's known layout.
    public func with(bytes: [UInt8]) -> OutputLine {
        OutputLine(bytes: bytes, route: route, sequence: sequence, eventID: eventID, ptsNs: ptsNs, track: track, label: label, createdNs: createdNs)
    }

    /// The line with `"NAME":"VALUE"` last in its envelope (a snapshot's path): the line ends in `}\n`.
    public func with(envelopeField name: String, _ value: String) -> OutputLine {
        var field = JSONObject()
        field.set(name, value)
        return with(member: field)
    }

    /// The line with `"NAME":VALUE` (a number) last in its envelope.
    public func with(envelopeField name: String, _ value: Int) -> OutputLine {
        var field = JSONObject()
        field.set(name, value)
        return with(member: field)
    }

    private func with(member field: JSONObject) -> OutputLine {
        let member = [UInt8(ascii: ",")] + field.bytes.dropFirst()
        return OutputLine(bytes: bytes.dropLast(2) + member + [UInt8(ascii: "}"), UInt8(ascii: "\n")], route: route, sequence: sequence,
                          eventID: eventID, ptsNs: ptsNs, track: track, label: label, createdNs: createdNs, result: result)
    }

    /// The result line with `"track_id":ID` as its data's first member (the analytics' track), and
    /// `"stationary":true` after it when the track is stationary.
    /// Nil for a line that is no result of known layout, or whose data has a track id already.
    public func with(trackID: Int, stationary: Bool = false) -> OutputLine? {
        guard let result, !result.fields.hasTrackID, result.dataStart < bytes.count else { return nil }
        let empty = bytes[result.dataStart] == UInt8(ascii: "}")
        let member = Array("\"track_id\":\(trackID)\(stationary ? ",\"stationary\":true" : "")\(empty ? "" : ",")".utf8)
        var fields = result.fields
        fields.hasTrackID = true
        return OutputLine(bytes: bytes[..<result.dataStart] + member + bytes[result.dataStart...], route: route, sequence: sequence,
                          eventID: eventID, ptsNs: ptsNs, track: trackID, label: label, createdNs: createdNs,
                          result: Result(type: result.type, fields: fields, dataStart: result.dataStart))
    }
}
