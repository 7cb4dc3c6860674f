import Glibc

/// A system call's error number, kept as a value (swift-system's `Errno` is the model): it travels
/// inside cvhost's errors as their `cause`, so callers can ask what it was (`isShortage`, a code
/// compared), and it becomes text only where the error is shown (`description`: "No such file or
/// directory").
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno` now: read it right after the call that failed.
    public static var current: Errno { Errno(rawValue: errno) }

    /// The system's words for it, as strerror gives them.
    public var description: String { String(cString: strerror(rawValue)) }

    /// The system was short of something (a descriptor, memory, a process): not the caller's
    /// fault, and likely to pass.
    public var isShortage: Bool { [EMFILE, ENFILE, ENOMEM, EAGAIN, ENOBUFS].contains(rawValue) }
}
