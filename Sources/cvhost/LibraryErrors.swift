import ArgumentParser
import CVHostRun

/// CVHostRun's errors as ArgumentParser ends a command with them: a RunFailure is its exit code
/// (the message was said already), a UsageError a usage error (exit 64, with the help's hint).
func asCommandErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let failure as RunFailure {
        throw ExitCode(failure.exitCode)
    } catch let error as UsageError {
        throw ValidationError(error.description)
    }
}
