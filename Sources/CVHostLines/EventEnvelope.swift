extension JSONObject {
    /// Starts an output line with the envelope every event has, in this order:
    /// `event`, `host`, `session`, `event_id`, `source`, [`node`, `lease`,] `plugin`, `plugin_index`, `seq`, `ts`, `pts`.
    /// - Parameters:
    ///   - event: the event type, e.g. "result", "metrics", "session.started".
    ///   - source: the input the event belongs to (its name, or its path or URL without a password);
    ///     nil for lines of no input (`cvhost devices`, `cvhost plugins`, a camera plugged in).
    ///   - plugin, pluginIndex: the plugin and its position among the --plugin flags; nil for session events.
    ///   - seq: the frame sequence the event belongs to, if any.
    ///   - tsNs: capture time of that frame (ns since the epoch); for events without a frame, the time of the event.
    ///   - ptsNs: the frame's media time from the start of the source.
    /// `host` and `session` say who wrote the line (`Producer`), `event_id` which line it is. The object remembers event,
    /// source and plugin as the line's route (`line()`).
    public static func envelope(event: String, source: String?, plugin: String? = nil, pluginIndex: Int? = nil,
                                seq: UInt64? = nil, tsNs: Int64, ptsNs: Int64? = nil) -> JSONObject {
        var e = JSONObject()
        e.route = OutputLine.Route(event: event, source: source, plugin: plugin)
        e.sequence = seq
        e.ptsNs = ptsNs
        e.set("event", event)
        e.bytes.append(contentsOf: producerFields)
        let id = Producer.nextLineID()
        e.eventID = id
        e.set("event_id", id)
        e.set("source", source)
        // An input a fleet's node runs by its lease: which node, and which lease (SourceLeases).
        if let source, let lease = SourceLeases.lease(of: source) {
            e.set("node", lease.node)
            e.set("lease", lease.revision)
        }
        e.set("plugin", plugin)
        e.set("plugin_index", pluginIndex)
        e.set("seq", seq)
        e.setSeconds("ts", nanoseconds: tsNs)
        e.setSeconds("pts", nanoseconds: ptsNs)
        return e
    }

    /// `,"host":"…","session":"…"`, made once: the fields that follow `event` in every line (and in
    /// the crash line CPluginGuard writes).
    public static let producerFields: [UInt8] = {
        var o = JSONObject()
        o.set("host", Producer.host)
        o.set("session", Producer.session)
        return [UInt8(ascii: ",")] + o.bytes.dropFirst()
    }()

    /// The same and the `event_id` of the line of a plugin that crashed the process (`SESSION-0`: never another line's).
    public static let crashLineProducerFields: [UInt8] = {
        var o = JSONObject()
        o.set("event_id", "\(Producer.session)-0")
        return producerFields + [UInt8(ascii: ",")] + o.bytes.dropFirst()
    }()

    /// The finished line, with its newline, its route and its frame.
    public func line() -> OutputLine {
        var bytes = finished()
        bytes.append(UInt8(ascii: "\n"))
        return OutputLine(bytes: bytes, route: route ?? OutputLine.Route(event: "", source: nil, plugin: nil), sequence: sequence,
                          eventID: eventID, ptsNs: ptsNs, track: track, label: label)
    }

    /// A plugin's `result` line, its data (checked by JSONValidator) the last member: the line
    /// knows where its data starts, and what the validator noted of it.
    public func resultLine(type: String, data: [UInt8], fields: ResultFields) -> OutputLine {
        var object = self
        object.set("type", type)
        object.set("data", validatedJSON: data)
        let plain = object.line()
        // The data object is followed by the envelope's "}" and the newline.
        let dataStart = plain.bytes.count - 2 - data.count + 1
        return OutputLine(bytes: plain.bytes, route: plain.route, sequence: plain.sequence, eventID: plain.eventID, ptsNs: ptsNs,
                          label: fields.label ?? type, createdNs: plain.createdNs, result: OutputLine.Result(type: type, fields: fields, dataStart: dataStart))
    }
}
