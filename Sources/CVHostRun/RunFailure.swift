/// What ends a run or a command with an exit code other than 0 (ExitCodes), and why: the message
/// the executable says on stderr as it exits (`cvhost: error: ...`), once the run has closed what
/// it opened (ArgumentParser's `exit(withError:)`); none when there is nothing more to say (exit 22:
/// nothing found; lines lost, each output's loss said as it was counted).
public struct RunFailure: Error, Equatable, CustomStringConvertible {
    public let exitCode: Int32
    public let message: String?
    /// A call into a plugin never returned (HungPluginStop): its thread is left in it, so the
    /// process must end without waiting for threads or running exit handlers that could meet it
    /// (the executable's `_exit`). The run's lines are all written by then.
    public let abandonsThreads: Bool
    public init(_ exitCode: Int32, message: String? = nil, abandonsThreads: Bool = false) {
        self.exitCode = exitCode
        self.message = message
        self.abandonsThreads = abandonsThreads
    }
    public var description: String { message ?? "exit code \(exitCode)" }
}

/// A setting that cannot be run as given (a bad --input, --http, --output...): the CLI says it as
/// a usage error (exit 64), with the config file's line when the setting came from there.
public struct UsageError: Error, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
