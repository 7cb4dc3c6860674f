/// Every `event` a line of cvhost's can have: the vocabulary of schema/cvhost-events.schema.json's
/// `event` enum (a test keeps the two equal). What an output's `events=` may name.
public enum EventNames {
    public static let all: [String] = [
        "session.started", "session.stopped", "session.error", "session.frames_lost", "session.interrupted",
        "session.interruption_ended", "input.skipped", "input.added", "input.removed", "image.scanned", "result",
        "metrics", "plugin", "device", "device.connected", "device.disconnected", "plugin.crashed", "plugin.restarted",
        "plugin.quarantined", "plugin.reloaded", "plugin.reload_failed", "output.connected", "output.disconnected",
        "command.result", "control.changed", "track.started", "track.ended", "track.stationary", "zone.entered", "zone.exited",
        "zone.occupancy", "zone.dwell", "line.crossed", "analytics.summary", "analytics.changed", "input.time_jumped",
        "clip.saved", "motion.started", "motion.ended",
    ]
}
