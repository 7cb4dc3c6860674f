import ArgumentParser
import CVHostCore
import CVHostRun
import CVHostLines
import CVHostPlugins
import CVHostSources
import CPluginGuard
import Glibc

@main
struct CVHost: ParsableCommand {
    static func main() {
        // Memory or a thread that the system refuses ends the process with one line and exit 7
        // (ResourceExhaustion says what; the end is the executable's to make).
        ResourceExhaustion.onExhausted = { _ in
            cvhost_guard_host_exiting()
            _exit(ExitCodes.outOfResources)
        }
        // A plugin's worker process (isolation=process) is this executable run again. It ends
        // with _exit: other threads may still be in the plugin's code (no exit handlers then).
        if let status = PluginWorker.runIfRequested() { _exit(status) }
        // Not CommandLine.arguments: it repairs a file name that is not UTF-8 to U+FFFD, which names
        // no file; PathText keeps its bytes as \xNN escapes.
        let arguments = (1..<max(1, Int(CommandLine.argc))).compactMap { i in CommandLine.unsafeArgv[i].map { PathText.text(cString: $0) } }
        if arguments.first == "run" {
            // From the first instant a run is asked to stop, it stops cleanly (exit 0), also before
            // its own handler is in place (RunProcess's SignalHandler replaces this one). SIGHUP
            // that cvhost was started ignoring (nohup) stays ignored.
            for sig in [SIGINT, SIGTERM, SIGHUP] where !(sig == SIGHUP && SignalHandler.isIgnored(sig)) {
                signal(sig) { _ in _exit(0) }
            }
        }
        var parsed = arguments
        var locate: (String) -> String = { $0 }
        if arguments.first == "run", let config = RunConfigFile.configPath(in: arguments) {
            // `run --config FILE`: the file's settings, then the command line's (which override them).
            let commandLine = Array(arguments.dropFirst())
            let file: RunConfigFile
            do { file = try RunConfigFile(path: config) } catch {
                Log.error("\(error)")
                Glibc.exit(ExitCodes.usage)
            }
            parsed = ["run"] + file.merged(with: commandLine)
            // An error about a value from the file names the file, line and key.
            locate = { file.locate($0, commandLine: commandLine) }
            RunCommand.origin = { file.origin(of: $0, value: $1, commandLine: commandLine) }
            // SIGHUP (systemctl reload): the file read again, the command line over it, as now.
            RunCommand.reread = {
                let file = try RunConfigFile(path: config)
                RunCommand.origin = { file.origin(of: $0, value: $1, commandLine: commandLine) }
                let merged = file.merged(with: commandLine)
                do {
                    return try RunCommand.parse(merged).settings()
                } catch let e as UsageError {
                    throw ReloadRefused(description: file.locate(e.description, commandLine: commandLine))
                } catch {
                    throw ReloadRefused(description: file.locate(RunCommand.message(for: error), commandLine: commandLine))
                }
            }
        }
        if parsed.first == "run" && parsed.count - 1 > RunConfigFile.maxArguments {
            Log.error("\(parsed.count - 1) arguments: cvhost run takes at most \(RunConfigFile.maxArguments) (a list of at most "
                      + "\(RunConfigFile.maxListItems) items in a --config file, or on the command line)")
            Glibc.exit(ExitCodes.usage)
        }
        do {
            var command = try parseAsRoot(parsed)
            try command.run()
        } catch {
            // Help, --version and exit codes as ArgumentParser ends them; a refusal of the command
            // line in cvhost's one style (one line: `cvhost: error: ...`), as every other refusal.
            // A run's own failure was said as it became an ExitCode (asCommandErrors): no second line.
            if let code = error as? ExitCode { Glibc.exit(code.rawValue) }
            guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
            Log.error(locate(message(for: error)))
            Glibc.exit(ExitCodes.usage)
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "cvhost",
        abstract: "Run computer-vision plugins on camera, video, image or test-pattern frames; read results as JSON Lines.",
        discussion: """
            cvhost runs a capture session and hands every frame to the plugins you name, each on its own serial delivery queue with back-pressure and metrics. Results, metrics and session events are written to stdout as JSON Lines (one object per line; schema in schema/cvhost-events.schema.json), or with --output to files and brokers (MQTT, Kafka, NATS JetStream). Logs go to stderr.

            EXAMPLES
              cvhost run --plugin barcode              # the first camera
              cvhost run --plugin barcode --input clip.mp4
              cvhost run --plugin barcode --device /dev/video2 \\
                         --format 1280x720@30 --control brightness=140
              cvhost run --plugin barcode --reconnect \\
                         --input gate=rtsp://user:pass@10.0.0.5/stream1 \\
                         --device desk=/dev/video0
              cvhost run --plugin null:delay_ms=50,results=1 --plugin null \\
                         --input testsrc:640x480@60 --duration 5
              cvhost devices
              cvhost plugins

            \(ExitCodes.helpText)
            """,
        version: Producer.version,
        subcommands: [RunCommand.self, DevicesCommand.self, PluginsCommand.self, FleetCommand.self])
}

/// A config file read again for a reload that cannot be run: why, naming the file, its line and key.
struct ReloadRefused: Error, CustomStringConvertible {
    let description: String
}
