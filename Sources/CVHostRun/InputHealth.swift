import CVHostCore
import CVHostLines

/// An input's health as `GET /inputs`, `/healthz` and `/metrics` say it: its state (starting;
/// streaming; reconnecting, with why and when the next try is; stopped, with why), its last
/// frame's age, its frame rate over its last frames, and how often it came back after being lost.
struct InputHealth {
    enum State: String { case starting, streaming, reconnecting, stopped }

    let state: State
    /// Stopped: the session's reason (end_of_input, error, removed...), and the error, if one.
    let stoppedBecause: String?
    let error: String?
    /// Reconnecting: why it was lost, and the next try's time (wall clock, ns) when known.
    let problem: String?
    let nextTryWallNs: Int64?
    let lastFrameAgeSeconds: Double?
    let fps: Double?
    let reconnects: UInt64
    let frames: UInt64

    init(_ s: SourceRun, nowNs: UInt64 = HostClock.monotonicNs()) {
        let session = s.session
        let connection = (s.device as? ConnectionHealthReporting)?.connectionHealth.snapshot
        frames = session.capturedFrameCount
        reconnects = connection?.reconnects ?? 0
        lastFrameAgeSeconds = session.lastFrameNs.map { nowNs > $0 ? Double(nowNs - $0) / 1e9 : 0 }
        let ended = s.report.ending
        if s.isStopped || ended != nil {
            state = .stopped
        } else if session.isInterrupted {
            state = .reconnecting
        } else {
            state = session.isRunning && frames > 0 ? .streaming : .starting
        }
        stoppedBecause = state == .stopped ? ended?.reason : nil
        error = state == .stopped ? ended?.error : nil
        problem = state == .reconnecting ? connection?.problem : nil
        nextTryWallNs = state == .reconnecting ? connection?.nextTryWallNs : nil
        fps = state == .streaming ? session.recentFrameRate : nil
    }

    /// Frames flow: the only state /healthz counts as healthy.
    var healthy: Bool { state == .streaming }

    var json: JSONObject {
        var o = JSONObject()
        o.set("state", state.rawValue)
        if let stoppedBecause { o.set("reason", stoppedBecause) }
        if let error { o.set("error", error) }
        if let problem { o.set("problem", problem) }
        if let next = nextTryWallNs { o.set("next_try", Double(next) / 1e9, decimals: 3) }
        o.set("last_frame_age", lastFrameAgeSeconds, decimals: 3)
        o.set("fps", fps, decimals: 2)
        o.set("reconnects", reconnects)
        o.set("frames", frames)
        return o
    }
}
