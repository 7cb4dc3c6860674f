import ArgumentParser
import CVHostCore
import CVHostRun

/// CVHostRun's errors as ArgumentParser ends a command with them: a RunFailure is its message on
/// stderr and its exit code, a UsageError a usage error (exit 64, with the help's hint). Said here,
/// at the top, once the run has closed what it opened: the last line on stderr says why it ended.
func asCommandErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let failure as RunFailure {
        if let message = failure.message { Log.error(message) }
        throw ExitCode(failure.exitCode)
    } catch let error as UsageError {
        throw ValidationError(error.description)
    }
}
