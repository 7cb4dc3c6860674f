import CVHostCore

/// An error of an output, as CaptureError is an input's: a code programs can switch on, what
/// failed (naming the output, file or folder, and what to do), and the system call's error
/// behind it. Every output error that stops a run before it starts is one of these (exit 5).
public struct OutputError: Error, CustomStringConvertible, Sendable {
    /// The kind of failure. New codes may be added; switch with a default.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A file, named pipe, CA file or spool file cannot be opened or used.
        public static let cannotOpen = Code("cannot_open")
        /// A folder cvhost does not trust with its files: another user's, writable by others, a link.
        public static let untrustedFolder = Code("untrusted_folder")
        /// The spool folder is in use by another output or cvhost process.
        public static let inUse = Code("in_use")
        /// The spool's segment numbers ran out.
        public static let exhausted = Code("exhausted")
        /// The broker cannot be reached, or did not accept the connection (address, TLS, password).
        public static let brokerUnavailable = Code("broker_unavailable")
        /// The broker was reached and will not take what cvhost would send: a topic it does not
        /// have, no JetStream, a stream that takes other subjects.
        public static let brokerRefused = Code("broker_refused")
        /// A broker library could not allocate.
        public static let outOfMemory = Code("out_of_memory")
    }

    public let code: Code
    /// What failed, without the system's reason (`cause`).
    public let what: String
    /// The system call's error behind it, if one failed.
    public let cause: Errno?

    public init(_ code: Code, _ what: String, cause: Errno? = nil) {
        self.code = code
        self.what = what
        self.cause = cause
    }

    /// The one line people read.
    public var message: String { cause.map { "\(what): \($0)" } ?? what }

    public var description: String { message }

    /// The same error, said of an output (`what` first).
    func said(of output: String) -> OutputError { OutputError(code, "\(output): \(what)", cause: cause) }
}
