import CVHostCore

/// How a run ended, as the exit code sees it (after the outputs delivered what waited): the
/// facts, gathered from the run's inputs and plugins, and the one code they give. The order of
/// the checks is the contract: a failed input (2) before an input none of whose images could be
/// read (3), a quarantined plugin (21), a plugin that failed every frame (23), nothing found (22).
public struct RunConclusion: Sendable {
    /// An input failed while running (session.error), even while others went on.
    public var inputFailed = false
    /// An input of still images none of which could be read: its source id.
    public var unreadImages: String?
    /// A plugin quarantined after repeated crashes: its name.
    public var quarantinedPlugin: String?
    /// A plugin whose process() failed on every frame: its name and input.
    public var pluginFailingEveryFrame: (name: String, source: String)?
    /// Whether any plugin wrote a result.
    public var anyResult = true
    /// The stop asked for (a signal, --duration, a command...); nil when the inputs ended by themselves.
    public var stoppedBy: StopReason?

    public init() {}

    /// The exit code and what to say on stderr (nil: success).
    public var failure: (code: Int32, message: String)? {
        if inputFailed { return (ExitCodes.runtimeError, "") }
        // As a video none of whose frames decodes is refused at its opening (exit 3).
        if let unreadImages {
            return (ExitCodes.inputUnavailable, "\(unreadImages): none of its images could be read (each is named in an input.skipped line)")
        }
        if let quarantinedPlugin {
            return (ExitCodes.pluginQuarantined,
                    "plugin \(quarantinedPlugin) was quarantined after repeated crashes: its results stop at plugin.quarantined")
        }
        if let (name, source) = pluginFailingEveryFrame {
            return (ExitCodes.pluginFailedEveryFrame,
                    "plugin \(name) failed on every frame (\(source)): see its messages above and its metrics' frames.failed")
        }
        // A run stopped by a signal, a command or a closed stdout found what it had time to find.
        let endedByItself = stoppedBy == nil || stoppedBy == .duration
        if endedByItself && !anyResult { return (ExitCodes.nothingFound, "") }
        return nil
    }
}
