import CPluginGuard
import CVHostCore
import CVHostFleet
import CVHostLines
import CVHostOutput
import CVHostRun
import CVHostSources
import Glibc

/// What `cvhost run` sets for the whole process around a `HostRun`, and how it ends the process:
/// the library runs and reports, only this executable decides that the process ends.
///
/// Set up, in this order: the log level and FFmpeg's, SIGPIPE ignored (a closed stdout ends the
/// run quietly), stdout claimed for the JSON lines (what plugins write to descriptor 1 goes to
/// stderr), the crash guard (a plugin crashing the process is named, exit 19), freed memory given
/// back to the system every 30 s (FreedMemoryReturn), and the signals.
enum RunProcess {
    /// Runs `settings` and returns normally for exit 0; exits the process itself for the endings
    /// that must not wait for anything (a stop before anything ran, a hung plugin, a second signal).
    /// - Throws: RunFailure for every other exit code (ArgumentParser's way to end the command).
    /// - Parameter reread: the settings read anew from the config file (with --config): SIGHUP reloads them.
    static func run(_ settings: RunSettings, reread: (() throws -> RunSettings)? = nil) throws {
        Log.level = settings.verbose ? .debug : (settings.quiet ? .warning : .info)
        VideoFileDevice.setLibraryLogging(verbose: settings.verbose)
        signal(SIGPIPE, SIG_IGN)
        let results = StandardOutput.claim()
        let toStdout = settings.outputs.contains(.stdout)
        // Plugins run in this process: if one crashes it, say which one, on which frame (on
        // stdout, when it is an output: a signal handler cannot reach the other outputs' queues).
        cvhost_guard_set_producer(String(decoding: JSONObject.crashLineProducerFields, as: UTF8.self))
        cvhost_guard_install(ExitCodes.pluginCrashed, toStdout ? results : -1)
        if !toStdout { close(results) }
        FreedMemoryReturn.start()
        let run = HostRun(settings, resultsDescriptor: results)
        if let text = settings.fleet, let address = try? FleetAddress(parsing: text) {
            FleetNode(address, node: settings.node ?? FleetAddress.nodeName(host: Producer.host),
                      capacity: max(0, settings.maxInputs - settings.inputs.count), http: settings.liveView.map { $0.publicURL ?? "http://\($0.host):\($0.port)" },
                      run: run).start()
        }
        let reload: (@Sendable () -> Void)? = reread.map { reread in
            nonisolated(unsafe) let reread = reread
            return {
                do {
                    run.reload(try reread())
                } catch {
                    Log.error("reload: \(error); the run goes on as it was")
                }
            }
        }
        let signals = SignalHandler(onReload: reload) {
            run.requestStop(.signal)
            // While the outputs or inputs open (a required broker awaited, a FIFO with no
            // writer, a server that does not answer), nothing has run: a stop ends cvhost at once.
            if let waiting = run.stoppableAtOnce {
                Log.info("stopped while \(waiting): nothing had run yet")
                cvhost_guard_host_exiting()
                exit(ExitCodes.success)
            }
        }
        do {
            try run.run()
        } catch let failure as RunFailure where failure.abandonsThreads {
            // A plugin's call never returned: nothing may wait for its thread (exit handlers, destructors).
            if let message = failure.message { Log.error(message) }
            cvhost_guard_host_exiting()
            _exit(failure.exitCode)
        } catch is StoppedBeforeRunning {
            signals.cancel()
            cvhost_guard_host_exiting()
            return
        } catch {
            signals.cancel()
            cvhost_guard_host_exiting()
            throw error
        }
        // The final lines are written with the signals still handled.
        signals.cancel()
        cvhost_guard_host_exiting()
    }
}
