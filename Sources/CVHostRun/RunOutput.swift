import CVHostCore
import CVHostLines
import CVHostOutput
import Foundation
import Glibc

/// `cvhost run --output …`: the outputs a run writes to, opened before anything else, and what
/// became of their lines at the end (said on stderr; exit 4 when lines were lost).
public enum RunOutput {
    // Table lines under 80 columns: ArgumentParser wraps longer ones badly.
    public static let helpText = """
        OUTPUTS (--output, repeatable; default: stdout alone)
          -, stdout        JSON Lines on stdout
          file:PATH        appended to PATH; at 100 MB it becomes PATH.1 (then
                           PATH.2...) and a new PATH is begun (max_mb=N, keep=K)
          mqtt://[user[:password]@]host[:port][/prefix]
                           published to an MQTT broker (port 1883, prefix
                           cvhost) with QoS 1 (qos=0|1|2)
          mqtts://...      the same over TLS (port 8883; ca=FILE, else the
                           system's CA certificates)
          kafka://[user[:password]@]broker[:port][,broker...]/TOPIC
                           produced to a Kafka topic (port 9092): idempotent,
                           acks=all, keyed by the input (compression=none|gzip|
                           snappy|lz4|zstd; tls=true, ca=FILE; with a user,
                           SASL: sasl=plain|scram-sha-256|scram-sha-512)
          nats://[user[:password]@]host[:port][/subject]
                           published to a NATS JetStream stream (port 4222,
                           subject cvhost, stream=CVHOST: made if missing),
                           each stored once by its event id (token=T;
                           tls=true, ca=FILE)
        Options follow a ? and are joined by &, e.g. 'mqtt://broker/cvhost?qos=1&queue=50000'. Every output but stdout has a queue (queue=N lines, 100000) and a thread of its own: a slow disk or an absent broker never holds back the capture. When a queue is full, its oldest line is dropped and counted (the metrics' "output" section). A broker that cannot be reached is retried (0.5 s, doubling to 30 s) while the run goes on; output.disconnected and output.connected go to the other outputs. required=true: exit 5 instead, when the broker does not accept the connection within --open-timeout at start. At the end, an output has drain=S seconds (10) to deliver what waits. Lines lost on the way make the exit code 4. A user without a password takes it from $CVHOST_MQTT_PASSWORD, $CVHOST_KAFKA_PASSWORD or $CVHOST_NATS_PASSWORD (a NATS token from $CVHOST_NATS_TOKEN); a password is never printed.
        Brokers deliver at least once: a line may arrive twice (after an outage), always with the same event_id; drop repeats by it. spool=DIR keeps every line of a broker output on disk (DIR, made if missing, one output each) until the broker has it: an outage of any length the spool holds (spool_mb=N, 1024) loses nothing, and lines left when cvhost stops or is killed are sent first by the next run with the same spool. A full spool keeps its oldest lines; newer ones are dropped and counted (spool_full).
        events=NAME+NAME... (any output but stdout; globs: zone.*) sends only those events, e.g. 'mqtt://broker/cvhost?events=line.crossed+zone.*+clip.saved': a broker spared the per-frame result and metrics lines.
        MQTT topics: PREFIX/HOST/SOURCE/PLUGIN/EVENT (e.g. cvhost/gate-1/cam0/barcode/result; _ for none; / + # in a name become _), the payload is the line. PREFIX/HOST/status is "online" (retained), and "offline" when cvhost stops or dies (its last will). counts=true adds retained states: PREFIX/HOST/SOURCE/status, PREFIX/HOST/SOURCE/PLUGIN/lines/NAME and .../zones/NAME (the totals, the occupancy), PREFIX/HOST/SOURCE/snapshot_url. discovery=homeassistant adds Home Assistant's MQTT discovery configs for them (discovery_prefix=homeassistant): the inputs, counts and zones appear in Home Assistant with no YAML. NATS subjects: SUBJECT.HOST.SOURCE.PLUGIN.EVENT (. * > and spaces in a name become _). Kafka: key SOURCE, headers cvhost-event, cvhost-session, cvhost-event-id.
        """

    /// The `--output` flags, parsed (stdout when there are none).
    static func destinations(_ flags: [String], environment: [String: String]) throws(UsageError) -> [OutputDestination] {
        do {
            return try flags.isEmpty ? [.stdout] : flags.map { try OutputDestination(parsing: $0, environment: environment) }
        } catch {
            throw UsageError((error as? OutputDestination.ParseError)?.description ?? "\(error)")
        }
    }

    /// Opens every output. - Throws: exit 5 naming the output that cannot be opened or reached.
    static func open(_ destinations: [OutputDestination], stdoutDescriptor: Int32, connectTimeout: Double, taps: [OutputSink],
                     stdoutSelection: StdoutSelection, onStdoutClosed: @escaping @Sendable () -> Void,
                     onRequiredFailed: @escaping @Sendable () -> Void) throws -> OutputRouter {
        do {
            return try OutputRouter(destinations: destinations, stdoutDescriptor: stdoutDescriptor, connectTimeout: connectTimeout,
                                    taps: taps, stdoutSelection: stdoutSelection, onStdoutClosed: onStdoutClosed, onRequiredFailed: onRequiredFailed)
        } catch {
            throw fail(error.description, code: ExitCodes.outputUnavailable)
        }
    }

    /// Delivers what waits, then says on stderr what each output lost. - Throws: exit 5 when a
    /// required=true output refused lines for good; exit 4 when an output lost lines (stdout or a
    /// file could not be written, a queue dropped lines, lines were still undelivered at the end);
    /// a stdout whose reader went away is a clean end.
    static func finish(_ output: OutputRouter) throws {
        let final = output.finish()
        var lost = false
        for s in final where s.output != "stdout" && s.totalDropped > 0 {
            let reasons = OutputDropReason.allCases.compactMap { r in s.dropped[r].flatMap { $0 > 0 ? "\(r.rawValue) \($0)" : nil } }
            Log.error("\(s.totalDropped) lines did not reach \(s.output) (\(reasons.joined(separator: ", "))); \(s.delivered) did")
            lost = true
        }
        for s in final {
            if let spooled = s.spooled, spooled > 0, let folder = s.spoolFolder {
                Log.warning("\(spooled) lines wait in the spool \(folder) for \(s.output): the next run with that spool sends them first")
            }
        }
        if let stdout = output.stdout { try checkOutput(stdout) }
        if let failure = output.requiredFailure {
            throw RunFailure(ExitCodes.outputUnavailable, message: failure + ": the output is required=true, so the run ended")
        }
        if lost { throw RunFailure(ExitCodes.outputFailed) }
    }
}
