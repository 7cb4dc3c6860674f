extension JSONObject {
    /// Starts an output line with the envelope every event has, in this order:
    /// `event`, `source`, `plugin`, `plugin_index`, `seq`, `ts`, `pts`.
    /// - Parameters:
    ///   - event: the event type, e.g. "result", "metrics", "session.started".
    ///   - source: the input the event belongs to (its name, or its path or URL without a password);
    ///     nil for lines of no input (`cvhost devices`, `cvhost plugins`, a camera plugged in).
    ///   - plugin, pluginIndex: the plugin and its position among the --plugin flags; nil for session events.
    ///   - seq: the frame sequence the event belongs to, if any.
    ///   - tsNs: capture time of that frame (ns since the epoch); for events without a frame, the time of the event.
    ///   - ptsNs: the frame's media time from the start of the source.
    public static func envelope(event: String, source: String?, plugin: String? = nil, pluginIndex: Int? = nil,
                                seq: UInt64? = nil, tsNs: Int64, ptsNs: Int64? = nil) -> JSONObject {
        var e = JSONObject()
        e.set("event", event)
        e.set("source", source)
        e.set("plugin", plugin)
        e.set("plugin_index", pluginIndex)
        e.set("seq", seq)
        e.setSeconds("ts", nanoseconds: tsNs)
        e.setSeconds("pts", nanoseconds: ptsNs)
        return e
    }
}
