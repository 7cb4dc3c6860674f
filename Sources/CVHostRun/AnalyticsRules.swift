import CVHostAnalytics
import CVHostCore
import CVHostPlugins

/// The run's analytics as they stand: the settings of --track, --zone and --line (and of what
/// was changed while the run goes on), and every runner's slot they are applied to.
final class AnalyticsRules: Sendable {
    private let state: Locked<(settings: AnalyticsSettings, slots: [TrackingSlot])>

    init(_ settings: AnalyticsSettings) {
        state = Locked((settings, []))
    }

    var settings: AnalyticsSettings { state.withLock { $0.settings } }

    /// The analytics slot of a new runner (the plugin called `plugin`, `index`th --plugin, on input
    /// `source`), filled when that plugin's boxes are followed.
    func stage(plugin: String, index: Int, source: String, live: Bool, confidence: Double?) -> TrackingSlot {
        let slot = TrackingSlot(source: source, plugin: plugin, pluginIndex: index, live: live, confidence: confidence)
        state.withLock { s in
            slot.replace(with: s.settings.stage(plugin: plugin, index: index, source: source, live: live, confidence: confidence))
            s.slots.append(slot)
        }
        return slot
    }

    /// The slots of runners destroyed while the run goes on (an input removed): no longer changed.
    func forget(_ runners: [PluginRunner]) {
        let gone = runners.compactMap { $0.resultStage as? TrackingSlot }
        state.withLock { s in s.slots.removeAll { slot in gone.contains { $0 === slot } } }
    }
}
