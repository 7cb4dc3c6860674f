/// The exclusive configuration lock of a device.
public final class ConfigurationLock: Sendable {
    private let held = Locked(false)

    public init() {}

    func lock(deviceName: String) throws {
        let acquired = held.withLock { held -> Bool in
            if held { return false }
            held = true
            return true
        }
        if !acquired {
            throw CaptureError(.configurationLocked, "\(deviceName) is already locked for configuration; unlock it first")
        }
    }

    func unlock() { held.withLock { $0 = false } }

    public var isLocked: Bool { held.withLock { $0 } }

    /// Throws unless the lock is held: call at the top of every configuration setter.
    public func require(for setting: String, deviceName: String) throws {
        guard isLocked else {
            throw CaptureError(.notLockedForConfiguration,
                               "cannot set \(setting) on \(deviceName): call lockForConfiguration() first")
        }
    }
}
