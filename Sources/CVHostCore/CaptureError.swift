/// An error from a capture device or session: a code programs can switch on, and a one-line
/// message for people that names the thing and what to do.
public struct CaptureError: Error, CustomStringConvertible, Sendable {
    /// The kind of failure. New codes may be added; switch with a default.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The input or device does not exist or cannot be opened.
        public static let inputUnavailable = Code("input_unavailable")
        /// The input exists but its contents are not something cvhost can decode.
        public static let unsupportedInput = Code("unsupported_input")
        /// A configuration change was attempted without lockForConfiguration().
        public static let notLockedForConfiguration = Code("not_locked_for_configuration")
        /// lockForConfiguration() while another holder has the lock.
        public static let configurationLocked = Code("configuration_locked")
        /// The device does not support the setting or format asked for.
        public static let unsupported = Code("unsupported")
        /// The device is in use by another program.
        public static let deviceBusy = Code("device_busy")
        /// Reading frames failed while running (the file is corrupt, the driver failed...).
        public static let streamFailed = Code("stream_failed")
        /// The input ended before all of it was read: a file cut short (its index lists more frames
        /// than it holds), so that its results cannot pass for the whole file's.
        public static let inputIncomplete = Code("input_incomplete")
        /// The camera was unplugged or its driver removed while running.
        public static let disconnected = Code("disconnected")
        /// A session operation that is not allowed in the session's present state.
        public static let invalidState = Code("invalid_state")
    }

    public let code: Code
    /// What failed, without the system's reason (`cause`).
    public let what: String
    /// The system call's error behind it, if one failed.
    public let cause: Errno?

    /// - Parameter cause: said after `message` where the error is shown ("cannot open x: No such file or directory").
    public init(_ code: Code, _ message: String, cause: Errno? = nil) {
        self.code = code
        self.what = message
        self.cause = cause
    }

    /// The one line people read.
    public var message: String { cause.map { "\(what): \($0)" } ?? what }

    public var description: String { message }
}

/// Thrown by `FrameStream.next()` when frames stop arriving for a reason that may pass (a camera
/// taken by another program, a signal lost): the session enters the interrupted state, emits
/// `interrupted`, and keeps asking for frames; the next frame ends the interruption.
public struct CaptureInterruption: Error, Sendable {
    public let reason: String
    public init(reason: String) { self.reason = reason }
}
