/// Why a session stopped.
public enum StopReason: String, Sendable {
    /// The file or image list was read to its end.
    case endOfInput = "end_of_input"
    /// The frame limit was reached.
    case frameLimit = "frame_limit"
    /// The duration limit was reached.
    case duration
    /// SIGINT, SIGTERM or SIGHUP.
    case signal
    /// Nobody reads the results any more (stdout closed).
    case outputClosed = "output_closed"
    /// A required output (required=true) refuses lines for good (not authorised, an unknown topic...).
    case outputFailed = "output_failed"
    /// --oneshot: a frame had a result.
    case firstResult = "first_result"
    /// stopRunning() was called.
    case requested
    /// The source failed; a runtimeError event came before.
    case error
    /// The input was removed from the running run (DELETE /inputs/NAME, remove_input, a reload).
    case removed
}

/// Why frames never reached the session.
public enum FrameLossReason: String, Sendable, CaseIterable {
    /// The driver's frame sequence skipped: frames it never delivered.
    case gap
    /// Delivered damaged: flagged with an error by the driver, or shorter than the format needs.
    case corrupt
}

/// What a session tells its observer (AVCaptureSession's notifications).
public enum SessionEvent: Sendable {
    /// The session runs: the device, its format, and what became of each requested setting.
    case started(device: DeviceSummary, format: DeviceFormat?, settings: [SettingReport])
    /// The session stopped; every output has delivered its last frame.
    case stopped(reason: StopReason, framesCaptured: UInt64, framesLost: [FrameLossReason: UInt64])
    /// The source failed while running; a `stopped` event follows.
    case runtimeError(CaptureError)
    /// The source reported frames lost before reaching the session, and why.
    case framesLost(count: UInt64, beforeSequence: UInt64, reason: FrameLossReason)
    /// Frames stopped arriving for a reason that may pass; the session keeps running.
    case interrupted(reason: String)
    /// Frames arrive again after an interruption.
    case interruptionEnded
}

/// The facts about a device that events carry.
public struct DeviceSummary: Sendable {
    public let uniqueID: String
    public let localizedName: String
    public let modelID: String
    public let kind: CaptureDeviceKind
    public let isLive: Bool

    public init(_ device: CaptureDevice) {
        uniqueID = device.uniqueID
        localizedName = device.localizedName
        modelID = device.modelID
        kind = device.kind
        isLive = device.isLive
    }
}
