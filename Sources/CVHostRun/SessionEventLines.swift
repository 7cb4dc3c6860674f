import CVHostAnalytics
import CVHostCore
import CVHostMotion
import CVHostLines
import CVHostPlugins
import CVHostV4L2

/// The JSON lines of session-level events (see schema/cvhost-events.schema.json).
public enum SessionEventLines {
    static func line(for event: SessionEvent, source: String, runners: [PluginRunner]) -> JSONObject {
        let now = HostClock.wallNs()
        switch event {
        case .started(let device, let format, let settings):
            var e = JSONObject.envelope(event: "session.started", source: source, tsNs: now)
            e.set("cvhost_version", Producer.version)
            var d = JSONObject()
            d.set("unique_id", device.uniqueID)
            d.set("name", device.localizedName)
            d.set("model_id", device.modelID)
            d.set("kind", device.kind.rawValue)
            d.set("live", device.isLive)
            e.set("device", object: d)
            if let format {
                e.set("format", object: activeFormat(format, fps: format.maxFrameRate))
            } else {
                e.set("format", nil as String?)
            }
            e.set("settings", array: settings.map { s in
                var o = JSONObject()
                o.set("setting", s.setting)
                o.set("requested", s.requested)
                o.set("applied", s.applied)
                o.set("status", s.status.rawValue)
                o.set("message", s.message)
                return o
            })
            e.set("plugins", array: runners.map(pluginSummary))
            return e
        case .stopped(let reason, let frames, let lost):
            var e = JSONObject.envelope(event: "session.stopped", source: source, tsNs: now)
            e.set("reason", reason.rawValue)
            e.set("frames", frames)
            var byReason = JSONObject()
            for why in FrameLossReason.allCases { byReason.set(why.rawValue, lost[why] ?? 0) }
            e.set("frames_lost", object: byReason)
            return e
        case .runtimeError(let error):
            var e = JSONObject.envelope(event: "session.error", source: source, tsNs: now)
            e.set("code", error.code.name)
            e.set("message", error.message)
            return e
        case .interrupted(let reason):
            var e = JSONObject.envelope(event: "session.interrupted", source: source, tsNs: now)
            e.set("reason", reason)
            return e
        case .interruptionEnded:
            return JSONObject.envelope(event: "session.interruption_ended", source: source, tsNs: now)
        case .framesLost(let count, let before, let why):
            var e = JSONObject.envelope(event: "session.frames_lost", source: source, seq: before, tsNs: now)
            e.set("count", count)
            e.set("reason", why.rawValue)
            return e
        }
    }

    /// A device's active format: `session.started`'s `format` and `cvhost devices`' `active_format`.
    public static func activeFormat(_ format: DeviceFormat, fps: Double) -> JSONObject {
        var f = JSONObject()
        f.set("fourcc", format.deviceFourCC)
        f.set("width", format.width)
        f.set("height", format.height)
        f.set("fps", fps, decimals: 3)
        return f
    }

    static func pluginSummary(_ r: PluginRunner) -> JSONObject {
        var o = JSONObject()
        o.set("plugin", r.plugin.name)
        o.set("plugin_index", r.index)
        o.set("version", r.plugin.version)
        o.set("path", r.plugin.path)
        o.set("instances", r.instanceCount)
        o.set("queue_depth", r.output.maxQueuedFrames)
        // Its boxes followed (--track), and the zones and lines watched on this input.
        if let tracked = r.tracked { o.set("analytics", object: tracked.summary) }
        o.set("backpressure", r.output.statistics.policy?.rawValue)
        o.set("max_fps", r.output.connection.videoMinFrameDuration > 0 ? 1 / r.output.connection.videoMinFrameDuration : nil,
              decimals: 3)
        o.set("mirror", r.output.connection.isVideoMirrored)
        o.set("rotate", r.output.connection.videoRotationAngle)
        // The frames it asked for (request_frames): what it sees of the picture.
        if let scaling = r.output.scaling {
            var frames = JSONObject()
            frames.set("width", scaling.width)
            frames.set("height", scaling.height)
            switch scaling.mode {
            case .stretch: frames.set("resize", "stretch")
            case .letterbox(let pad):
                frames.set("resize", "letterbox")
                frames.set("pad", Int(pad))
            }
            frames.set("pixel_formats", strings: r.output.acceptedPixelFormats.map(\.name))
            frames.set("full_frame", r.output.deliversFullFrame)
            frames.set("motion_regions", r.output.deliversRegions)
            o.set("frames", object: frames)
        }
        // Each value as its type says: a number is a number, a flag true or false.
        var options = JSONObject()
        for (k, v) in r.resolvedOptions {
            switch r.plugin.options.first(where: { $0.name == k })?.type {
            case .int?: options.set(k, Int64(v))
            case .double?: options.set(k, Double(v), decimals: 9)
            case .bool?: options.set(k, v == "true")
            default: options.set(k, v)
            }
        }
        o.set("options", object: options)
        return o
    }

    /// `device.connected` / `device.disconnected`: a camera plugged in or out while running.
    static func deviceChange(_ change: V4L2DeviceMonitor.Change) -> JSONObject {
        let (event, node) = switch change {
        case .connected(let node): ("device.connected", node)
        case .disconnected(let node): ("device.disconnected", node)
        }
        var e = JSONObject.envelope(event: event, source: nil, tsNs: HostClock.wallNs())
        setNode(node, in: &e)
        return e
    }

    /// What names a camera node, in `device` (cvhost devices) and `device.connected`/`disconnected`.
    public static func setNode(_ node: V4L2NodeInfo, in e: inout JSONObject) {
        e.set("path", node.path)
        e.set("unique_id", node.uniqueID)
        e.set("name", node.card)
        e.set("model_id", node.modelID)
        e.set("driver", node.driver)
        e.set("bus_info", node.busInfo)
    }

    /// `input.added`: an input added (or changed: added again under its name) while the run goes on,
    /// before its session.started; `input` as written, a password as ***.
    static func inputAdded(source: String, spec: InputSpec, plugins: [PluginRunner], by origin: String) -> JSONObject {
        var e = JSONObject.envelope(event: "input.added", source: source, tsNs: HostClock.wallNs())
        switch spec.kind {
        case .input(let text): e.set("input", InputSpec.shown(text))
        case .camera(let path): e.set("device", path)
        case .firstCamera: break
        }
        e.set("plugins", array: plugins.map { r in
            var o = JSONObject()
            o.set("plugin", r.plugin.name)
            o.set("plugin_index", r.index)
            return o
        })
        e.set("by", origin)
        return e
    }

    /// `input.removed`: an input is removed (or changed) while the run goes on; its final metrics and
    /// its session.stopped (reason `removed`) follow.
    static func inputRemoved(source: String, by origin: String) -> JSONObject {
        var e = JSONObject.envelope(event: "input.removed", source: source, tsNs: HostClock.wallNs())
        e.set("by", origin)
        return e
    }

    /// `motion.started` (where: `boxes`, in the frame's pixels; `changed`, the share of the picture)
    /// and `motion.ended` (`seconds` it lasted): an input's motion as the host sees it (--motion).
    static func motion(_ change: MotionWatch.Change, source: String) -> JSONObject {
        switch change {
        case .started(let sequence, let ptsNs, let captureNs, let boxes, let changed):
            var e = JSONObject.envelope(event: "motion.started", source: source, seq: sequence, tsNs: captureNs, ptsNs: ptsNs)
            e.set("boxes", array: boxes.map(AnalyticsEvent.box))
            e.set("changed", changed, decimals: 4)
            return e
        case .ended(let sequence, let ptsNs, let captureNs, let seconds):
            var e = JSONObject.envelope(event: "motion.ended", source: source, seq: sequence, tsNs: captureNs, ptsNs: ptsNs)
            e.set("seconds", seconds, decimals: 3)
            return e
        }
    }

    /// How an input's motion is looked for, in its session.started (`motion`).
    static func motionSettings(_ m: MotionSettings) -> JSONObject {
        var o = JSONObject()
        o.set("height", m.height)
        o.set("threshold", m.threshold)
        o.set("min_area", m.minArea)
        o.set("alpha", m.alpha, decimals: 4)
        o.set("lightning", m.lightning, decimals: 3)
        o.set("contrast", m.contrast)
        o.set("hold", m.hold, decimals: 3)
        return o
    }

    static func inputSkipped(source: String, path: String, reason: String) -> JSONObject {
        var e = JSONObject.envelope(event: "input.skipped", source: source, tsNs: HostClock.wallNs())
        e.set("path", path)
        e.set("reason", reason)
        return e
    }
}
