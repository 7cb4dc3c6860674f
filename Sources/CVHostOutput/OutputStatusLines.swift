import CVHostCore
import CVHostLines

/// `output.connected` / `output.disconnected`: a sink that is a connection (a broker) was reached, or
/// could not be reached or was lost (with why, and how many lines wait for it). Written to the
/// run's other sinks: a subscriber cannot hear that its broker went away from the broker.
enum OutputStatusLines {
    static func line(output: String, connected: Bool, reason: String?, queued: Int) -> OutputLine {
        var e = JSONObject.envelope(event: connected ? "output.connected" : "output.disconnected", source: nil,
                                    tsNs: HostClock.wallNs())
        e.set("output", output)
        e.set("reason", reason)
        e.set("queued", queued)
        return e.line()
    }
}
