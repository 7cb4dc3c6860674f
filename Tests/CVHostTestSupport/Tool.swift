import Foundation

/// Runs a tool to its end (a compiler, an encoder, a script) and collects what it printed.
public enum Tool {
    public struct Outcome: Sendable {
        public let status: Int32
        /// stdout and stderr together, in the order written.
        public let output: String
    }

    /// - Parameter executable: a path, or a name looked up on PATH.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                           currentDirectory: String? = nil) throws -> Outcome {
        let p = Process()
        if executable.contains("/") {
            p.executableURL = URL(fileURLWithPath: executable)
            p.arguments = arguments
        } else {
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = [executable] + arguments
        }
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        if let currentDirectory { p.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        p.standardInput = FileHandle.nullDevice
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return Outcome(status: p.terminationStatus, output: output)
    }

    /// A process for `executable` (a path, or a name looked up on PATH), started with no signal
    /// blocked: a child inherits the mask of the thread that starts it, and the test runner's
    /// threads block SIGTERM (a server told to stop gracefully would not hear it). Python's
    /// os.execvp puts the mask right, then becomes the tool.
    public static func withSignalsUnblocked(_ executable: String, _ arguments: [String]) -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = ["-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execvp(sys.argv[1], sys.argv[1:])",
                       executable] + arguments
        return p
    }

    /// Starts a tool in the background (a server, a sender); its output goes to the test's stderr.
    /// Stop it with terminate() and waitUntilExit().
    public static func start(_ executable: String, _ arguments: [String]) throws -> Process {
        let p = withSignalsUnblocked(executable, arguments)
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.standardError
        p.standardError = FileHandle.standardError
        try p.run()
        return p
    }

    /// Runs and throws unless the tool exits 0; the error names the command and shows its output.
    @discardableResult
    public static func check(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                             currentDirectory: String? = nil) throws -> String {
        let r = try run(executable, arguments, environment: environment, currentDirectory: currentDirectory)
        guard r.status == 0 else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey:
                "\(executable) \(arguments.joined(separator: " ")) exited \(r.status): \(r.output.suffix(2000))"])
        }
        return r.output
    }
}
