/// What ends a run or a command with an exit code other than 0 (ExitCodes): its message was said
/// on stderr when it was made (`fail`), or there is none to say (exit 22: nothing found).
public struct RunFailure: Error, Equatable, CustomStringConvertible {
    public let exitCode: Int32
    public init(_ exitCode: Int32) { self.exitCode = exitCode }
    public var description: String { "exit code \(exitCode)" }
}

/// A setting that cannot be run as given (a bad --input, --http, --output...): the CLI says it as
/// a usage error (exit 64), with the config file's line when the setting came from there.
public struct UsageError: Error, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
