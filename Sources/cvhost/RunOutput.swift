import ArgumentParser
import CVHostCore
import CVHostOutput
import Foundation
import Glibc

/// `cvhost run --output …`: the outputs a run writes to, opened before anything else, and what
/// became of their lines at the end (said on stderr; exit 4 when lines were lost).
enum RunOutput {
    static let helpText = """
        OUTPUTS (--output, repeatable; default: stdout alone)
          -, stdout                  JSON Lines on stdout
          file:PATH                  appended to PATH, rotated at 100 MB: PATH.1 ... PATH.5 (options max_mb=N, keep=K; max_mb=0: never)
          mqtt://[user[:password]@]host[:port][/prefix]
                                     published to an MQTT broker (port 1883, prefix cvhost), QoS 1 (option qos=0|1|2)
          mqtts://...                the same over TLS (port 8883; option ca=FILE, else the system's CAs)
        Options follow a ?, joined by &: --output 'mqtt://broker/cvhost?qos=1&queue=50000'. Every output but stdout has its own queue (queue=N lines, 100000; drain=S seconds at the end to deliver what waits, 10) and thread: a slow disk or a broker that is away never holds back the capture; when a queue is full its oldest lines are dropped, counted in the metrics' output section. A broker that cannot be reached is retried (0.5 s, doubling to 30 s) while the run goes on, and output.disconnected / output.connected go to the other outputs; required=true makes it exit 5 instead, when the broker does not accept the connection within --open-timeout at start. A user without a password takes it from $CVHOST_MQTT_PASSWORD; a password is never printed. Topics: PREFIX/HOST/SOURCE/PLUGIN/EVENT (e.g. cvhost/gate-1/cam0/barcode/result; _ for none; / + # in a name become _), the payload is the line; PREFIX/HOST/status is online (retained), and offline when cvhost stops or dies (its last will). Lines lost on the way make the exit code 4.
        """

    /// The `--output` flags, parsed (stdout when there are none).
    static func destinations(_ flags: [String]) throws -> [OutputDestination] {
        let password = ProcessInfo.processInfo.environment["CVHOST_MQTT_PASSWORD"]
        do {
            return try flags.isEmpty ? [.stdout] : flags.map { try OutputDestination(parsing: $0, passwordFromEnvironment: password) }
        } catch let error as OutputDestination.ParseError {
            throw ValidationError(error.description)
        }
    }

    /// Opens every output. - Throws: exit 5 naming the output that cannot be opened or reached.
    static func open(_ destinations: [OutputDestination], stdoutDescriptor: Int32, connectTimeout: Double,
                     onStdoutClosed: @escaping @Sendable () -> Void) throws -> OutputRouter {
        do {
            return try OutputRouter(destinations: destinations, stdoutDescriptor: stdoutDescriptor, connectTimeout: connectTimeout,
                                    onStdoutClosed: onStdoutClosed)
        } catch {
            throw fail(error.description, code: ExitCodes.outputUnavailable)
        }
    }

    /// Delivers what waits, then says on stderr what each output lost. - Throws: exit 4 when an
    /// output lost lines (stdout or a file could not be written, a queue dropped lines, lines were
    /// still undelivered at the end); a stdout whose reader went away is a clean end.
    static func finish(_ output: OutputRouter) throws {
        let final = output.finish()
        var lost = false
        for s in final where s.output != "stdout" && s.totalDropped > 0 {
            let reasons = OutputDropReason.allCases.compactMap { r in s.dropped[r].flatMap { $0 > 0 ? "\(r.rawValue) \($0)" : nil } }
            Log.error("\(s.totalDropped) lines did not reach \(s.output) (\(reasons.joined(separator: ", "))); \(s.delivered) did")
            lost = true
        }
        if let stdout = output.stdout { try checkOutput(stdout) }
        if lost { throw ExitCode(ExitCodes.outputFailed) }
    }
}
