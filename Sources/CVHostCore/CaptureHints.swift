/// The autofocus range a consumer asks for (AVCaptureDevice.AutoFocusRangeRestriction).
public enum AutoFocusRangeRestriction: String, Sendable, CaseIterable {
    case none, near, far
}

/// What consumers of a session would like from the device. Hints are applied where the device
/// supports them; what was applied is reported, never assumed.
public struct CaptureHints: Sendable, Equatable {
    public var autoFocusRangeRestriction: AutoFocusRangeRestriction
    public var minWidth: Int
    public var minHeight: Int

    public init(autoFocusRangeRestriction: AutoFocusRangeRestriction = .none, minWidth: Int = 0, minHeight: Int = 0) {
        self.autoFocusRangeRestriction = autoFocusRangeRestriction
        self.minWidth = minWidth
        self.minHeight = minHeight
    }

    /// Hints of several consumers merged: the largest minimum size; a focus range when all who
    /// ask for one agree on it (near wins over far when they disagree, as codes need it most).
    public static func merged(_ all: [CaptureHints]) -> CaptureHints {
        let ranges = Set(all.map(\.autoFocusRangeRestriction)).subtracting([.none])
        let range: AutoFocusRangeRestriction = ranges.contains(.near) ? .near : (ranges.first ?? .none)
        return CaptureHints(autoFocusRangeRestriction: range, minWidth: all.map(\.minWidth).max() ?? 0,
                            minHeight: all.map(\.minHeight).max() ?? 0)
    }
}

/// What happened to one requested setting.
public struct SettingReport: Sendable, Equatable {
    public enum Status: String, Sendable {
        case applied
        case unsupported
        case failed
    }

    public let setting: String
    public let requested: String
    /// The value read back from the device after setting it; nil when nothing was applied.
    public let applied: String?
    public let status: Status
    public let message: String?

    public init(setting: String, requested: String, applied: String?, status: Status, message: String? = nil) {
        self.setting = setting
        self.requested = requested
        self.applied = applied
        self.status = status
        self.message = message
    }
}
