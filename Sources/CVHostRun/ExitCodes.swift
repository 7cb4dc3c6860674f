import CVHostCore
import CVHostOutput
import CVHostPlugins
import Glibc

/// cvhost's exit codes: a contract with scripts, listed in `--help` and docs/running.md.
public enum ExitCodes {
    public static let success: Int32 = 0
    public static let internalError: Int32 = 1
    /// The input failed while running (a read or decode error, a camera unplugged).
    public static let runtimeError: Int32 = 2
    /// The input or device could not be opened.
    public static let inputUnavailable: Int32 = 3
    /// An output lost lines: stdout or a file could not be written (disk full, I/O error), a
    /// queue dropped lines, or lines were still undelivered at the end (RunOutput.finish).
    public static let outputFailed: Int32 = 4
    /// An --output cannot be opened (a file), or a required=true broker cannot be reached at start.
    public static let outputUnavailable: Int32 = 5
    /// --http cannot listen on its address (in use, not an address of this machine).
    public static let httpUnavailable: Int32 = 6
    /// The system refused memory for a frame, or a thread, that the run needs (ResourceExhaustion).
    public static let outOfResources: Int32 = ResourceExhaustion.exitCode
    /// A plugin's code crashed the process (a bad memory access, abort()...); CPluginGuard names it.
    public static let pluginCrashed: Int32 = 19
    /// A call into a plugin kept a stop waiting too long: the run ended without it (HungPluginStop).
    public static let pluginHung: Int32 = 20
    /// A plugin in a worker process (isolation=process) crashed too often and was quarantined:
    /// the run went on without it to its end.
    public static let pluginQuarantined: Int32 = 21
    /// The run ended by itself (its inputs' end, --max-frames, --duration) and no plugin wrote a
    /// result: for scripts, as zbarimg's 4. A stop by a signal or a command is not this.
    public static let nothingFound: Int32 = 22
    /// A plugin's process() failed on every frame it was given.
    public static let pluginFailedEveryFrame: Int32 = 23
    /// The command line is wrong (ArgumentParser's EX_USAGE).
    public static let usage: Int32 = 64
    /// A second SIGINT/SIGTERM/SIGHUP while stopping: exit at once.
    public static let forcedStop: Int32 = 130

    /// Every exit code with what it means, in order: `--help`'s EXIT CODES come from it, and
    /// docs/running.md's table is checked against it (ExitCodesTests). The plugins' refusals are
    /// PluginLoadError's kinds, each with its own code.
    public static let table: [(code: Int32, meaning: String)] = [
        (success, "success: input ended or a limit was reached with results, --oneshot found one, SIGINT/SIGTERM/SIGHUP, "
                  + "a stop command, or stdout closed"),
        (internalError, "internal error"),
        (runtimeError, "an input failed while running (session.error, then final metrics)"),
        (inputUnavailable, "an input or camera cannot be opened or set up as asked, or none of its frames could be decoded "
                           + "(every image of a folder refused)"),
        (outputFailed, "an output lost lines: stdout or a file could not be written (e.g. disk full), stdout's reader stopped "
                       + "reading while the run was stopping (5 s more, then its lines are dropped), a queue dropped lines, or "
                       + "lines were undelivered at the end (named on stderr; counted in metrics' \"output\")"),
        (outputUnavailable, "an --output cannot be opened, or a required=true broker cannot be reached at start"),
        (httpUnavailable, "--http cannot listen on its address (in use, or not this machine's)"),
        (outOfResources, "out of resources: memory for a frame, or a thread, could not be had (ulimit -v, ulimit -u, a full "
                         + "machine): named on stderr"),
    ] + PluginLoadError.Kind.allCases.filter { $0.exitCode < pluginCrashed }.map { ($0.exitCode, $0.meaning) } + [
        (pluginCrashed, "a plugin in cvhost's process crashed or called exit() (named on stderr and in session.error)"),
        (pluginHung, "a plugin hung while stopping (or in destroy); the run ended without it after 5 s (named on stderr and "
                     + "in its final metrics' \"hung\")"),
        (pluginQuarantined, "a plugin with isolation=process crashed 5 times within 60 s and was quarantined "
                            + "(plugin.quarantined); the run went on without it"),
        (nothingFound, "nothing found: the run ended by itself (end of input, --max-frames, --duration) and no plugin wrote a result"),
        (pluginFailedEveryFrame, "a plugin failed on every frame it was given (process() errors)"),
    ] + PluginLoadError.Kind.allCases.filter { $0.exitCode > pluginFailedEveryFrame }.map { ($0.exitCode, $0.meaning) } + [
        (usage, "bad command line"),
        (forcedStop, "a second SIGINT/SIGTERM/SIGHUP forced an immediate exit"),
    ]

    /// `--help`'s EXIT CODES: one code a paragraph, wrapped under 80 columns (ArgumentParser wraps
    /// longer lines badly).
    public static let helpText: String = {
        var lines = ["EXIT CODES"]
        for (code, meaning) in table {
            var line = "  " + String(code) + String(repeating: " ", count: max(1, 5 - String(code).count))
            for word in meaning.split(separator: " ") {
                if line.count + 1 + word.count > 76 {
                    lines.append(line)
                    line = String(repeating: " ", count: 7)
                } else if !line.hasSuffix(" ") {
                    line += " "
                }
                line += word
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }()
}

/// After JSON Lines were written: exit 4 if some were lost (a closed pipe is a clean end).
public func checkOutput(_ writer: JSONLineWriter) throws(RunFailure) {
    guard writer.lostLines, let error = writer.failure else { return }
    if writer.readerStalled {
        let lost = writer.statistics(name: "stdout").totalDropped
        throw fail("stdout's reader stopped reading: the run was stopped and \(lost) lines were not written (after 5 s without a read)",
                   code: ExitCodes.outputFailed)
    }
    throw fail("cannot write to stdout: \(Errno(rawValue: error).description); the lines from then on are lost", code: ExitCodes.outputFailed)
}

/// The failure that ends the run with `code`, and `message` that the executable says as it exits
/// (`cvhost: error: MESSAGE`).
public func fail(_ message: String, code: Int32) -> RunFailure {
    RunFailure(code, message: message)
}
