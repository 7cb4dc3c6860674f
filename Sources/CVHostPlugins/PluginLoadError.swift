import CVHostCore
import Glibc
/// Why a plugin could not be loaded or started. Each kind has its own exit code, documented in
/// `cvhost --help` and docs/running.md, so that scripts can tell them apart.
public struct PluginLoadError: Error, CustomStringConvertible, Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case notFound = "plugin_not_found"
        case notSharedObject = "not_a_shared_object"
        case noEntrySymbol = "no_entry_symbol"
        case abiMismatch = "abi_mismatch"
        case invalidDescriptor = "invalid_descriptor"
        case invalidName = "invalid_name"
        case createFailed = "create_failed"
        case unknownOption = "unknown_option"
        case badOptionValue = "bad_option_value"
        case unsafeFile = "unsafe_plugin_file"

        /// The process exit code for this refusal.
        public var exitCode: Int32 {
            switch self {
            case .notFound: 10
            case .notSharedObject: 11
            case .noEntrySymbol: 12
            case .abiMismatch: 13
            case .invalidDescriptor: 14
            case .invalidName: 15
            case .createFailed: 16
            case .unknownOption: 17
            case .badOptionValue: 18
            case .unsafeFile: 24
            }
        }

        /// What its exit code means (`cvhost --help`'s EXIT CODES).
        public var meaning: String {
            switch self {
            case .notFound: "plugin not found"
            case .notSharedObject: "plugin file is not a shared object"
            case .noEntrySymbol: "plugin has no entry symbol"
            case .abiMismatch: "plugin ABI version mismatch (a Python plugin's: its api_version)"
            case .invalidDescriptor: "plugin descriptor invalid (e.g. a required callback missing), or a Python plugin cannot be "
                + "imported (file and line named)"
            case .invalidName: "invalid plugin name"
            case .createFailed: "plugin create() failed (its own message is shown)"
            case .unknownOption: "unknown plugin option"
            case .badOptionValue: "bad plugin option value"
            case .unsafeFile: "a plugin file (or a folder above it) can be changed by another user: fix it (chmod go-w, chown), "
                + "or CVHOST_UNSAFE_PLUGIN_FILES=1"
            }
        }
    }

    public let kind: Kind
    /// What failed, without the system's reason (`cause`).
    public let what: String
    /// The system call's error behind it, if one failed.
    public let cause: Errno?

    /// - Parameter cause: the system call's error, when one failed: said after `message` where the
    ///   error is shown, and a shortage (EMFILE, ENFILE, ENOMEM, EAGAIN, ENOBUFS) makes `isShortage`.
    public init(_ kind: Kind, _ message: String, cause: Errno? = nil) {
        self.kind = kind
        self.what = message
        self.cause = cause
    }

    /// The one line people read.
    public var message: String { cause.map { "\(what): \($0)" } ?? what }

    /// The system was short of something the host needed (a descriptor, memory, a process): not
    /// the plugin's fault, and likely to pass.
    public var isShortage: Bool { cause?.isShortage ?? false }

    public var description: String { message }
}
