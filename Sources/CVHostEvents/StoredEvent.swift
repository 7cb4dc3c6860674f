import CVHostLines
import Foundation

/// One event worth looking back at, as the event store keeps it: read from its line, the fields
/// a query filters on apart, the line itself whole.
struct StoredEvent: Equatable {
    /// The events kept: what a person asks about later ("every crossing of the door yesterday"),
    /// never the per-frame ones (results, metrics, occupancy).
    static let kept: Set<String> = [
        "line.crossed", "zone.entered", "zone.exited", "zone.dwell", "track.ended", "clip.saved",
        "session.started", "session.stopped", "session.interrupted", "session.interruption_ended", "input.added", "input.removed",
    ]

    var eventID: String
    var event: String
    /// Seconds since the epoch.
    var ts: Double
    var source: String?
    var plugin: String?
    var line: String?
    var zone: String?
    var label: String?
    var track: Int64?
    var direction: String?
    /// The snapshot's file name in its folder, and its path (the line's `snapshot`).
    var snapshot: String?
    /// A clip.saved's file, and the event ids it holds.
    var clip: String?
    var clipEvents: [String] = []
    /// The clip's first frame's time (seconds since the epoch): where in it an event is.
    var clipStart: Double?
    var json: String

    /// nil for a line of an event not kept, or one that is not a JSON object with an `event_id`.
    init?(_ l: OutputLine) {
        guard Self.kept.contains(l.route.event),
              let o = try? JSONSerialization.jsonObject(with: Data(l.bytes)) as? [String: Any],
              let id = o["event_id"] as? String, let ts = (o["ts"] as? NSNumber)?.doubleValue, ts.isFinite else { return nil }
        let data = o["data"] as? [String: Any] ?? [:]
        eventID = id
        event = l.route.event
        self.ts = ts
        source = l.route.source
        plugin = l.route.plugin
        line = data["line"] as? String
        zone = data["zone"] as? String
        label = data["label"] as? String
        track = (data["track_id"] as? NSNumber)?.int64Value
        direction = data["direction"] as? String
        snapshot = o["snapshot"] as? String
        if event == "clip.saved" {
            clip = data["path"] as? String
            clipEvents = data["events"] as? [String] ?? []
            clipStart = (data["start_ts"] as? NSNumber)?.doubleValue
        }
        json = String(decoding: l.bytes.last == UInt8(ascii: "\n") ? l.bytes.dropLast() : l.bytes[...], as: UTF8.self)
    }
}
