import CVHostCore
import CVHostLines
import CVHostPlugins

/// The analytics stage of one runner (a plugin on an input), which a change while the run goes on
/// fills, replaces or empties: `--track PLUGIN` added, changed or removed (AnalyticsRules). Empty,
/// a frame's results pass through as they are. What a replaced stage still had open (its tracks'
/// ends, its summary) is written before the next frame's results.
final class TrackingSlot: FrameStage, Sendable {
    let source: String, plugin: String, pluginIndex: Int
    /// A camera or a network stream (the analytics clock measures its jumps against this host's).
    let live: Bool
    /// The plugin's own confidence threshold, which the tracker's follows.
    let confidence: Double?
    // Held while a frame goes through, so that a change lands between two frames.
    private let state = Locked<(tracked: TrackedResults?, pending: [OutputLine])>((nil, []))

    init(source: String, plugin: String, pluginIndex: Int, live: Bool, confidence: Double?) {
        self.source = source
        self.plugin = plugin
        self.pluginIndex = pluginIndex
        self.live = live
        self.confidence = confidence
    }

    /// The analytics of this plugin on this input now, if its boxes are followed.
    var tracked: TrackedResults? { state.withLock { $0.tracked } }

    /// Puts `new` in place of what followed the boxes until now (nil: no longer followed).
    func replace(with new: TrackedResults?) {
        state.withLock { s in
            if let old = s.tracked, old !== new { s.pending += old.finish() }
            s.tracked = new
        }
    }

    func frame(_ results: inout FrameResults) {
        state.withLock { s in
            if let tracked = s.tracked { tracked.frame(&results) }
            results.lines = s.pending + results.lines
            s.pending = []
        }
    }

    func finish(_ lines: inout [OutputLine], last: ProcessedFrame?) {
        state.withLock { s in
            lines += s.pending + (s.tracked?.finish() ?? [])
            s.pending = []
        }
    }
}

extension PluginRunner {
    /// This runner's analytics slot (every runner has one: --track may be added while running).
    var trackingSlot: TrackingSlot? { stages.lazy.compactMap { $0 as? TrackingSlot }.first }

    /// This runner's analytics, when its plugin's boxes are followed (--track).
    var tracked: TrackedResults? { trackingSlot?.tracked }
}
