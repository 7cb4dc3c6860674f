import CKafka
import CVHostCore
import CVHostLines
import Glibc

/// `--output kafka://BROKER[,BROKER…]/TOPIC`: lines produced to a Kafka topic by librdkafka's
/// idempotent producer (acks=all: a line is delivered when every in-sync replica has it; retries
/// never reorder or duplicate within the producer's session), each keyed by its input's id (one
/// camera's lines stay in one partition, in order), with the headers `cvhost-event`,
/// `cvhost-session` and `cvhost-event-id`. The payload is the line without its newline.
///
/// librdkafka connects, reconnects and retries on threads of its own; this object produces and
/// serves the delivery reports on the sink's thread (rd_kafka_poll, woken through a pipe that
/// librdkafka writes to when a report waits). A report's error (the cluster away longer than
/// message.timeout.ms) hands the line back to the sink, which produces it again, in order.
final class KafkaConnection: BrokerConnection {
    /// Lines in librdkafka's hands at most: many batches in flight at 20,000 lines a second.
    static let windowSize = 10_000
    /// How long librdkafka keeps trying one message before its report says it failed (and the sink
    /// produces it again): long enough to ride out a leader election, short enough that a lost
    /// cluster is noticed.
    static let messageTimeoutMs = 30_000

    private let rk: OpaquePointer
    private let topic: String
    private let events = Events()
    private let wake = WakePipe("the Kafka output")
    private var nextID: Int64 = 1

    /// What librdkafka's callbacks tell (called on the sink's thread, inside rd_kafka_poll).
    private final class Events {
        var acknowledged: [Int64] = []
        var failed: [Int64] = []
        var up = true
        var downReason: String?
        var fatal: String?
        var refused: [Int64] = []
        /// Why deliveries failed since the sink last asked: each distinct reason once.
        var failures: [String] = []
    }

    /// Makes the producer and waits (at most 5 s) for the cluster to answer with the topic's leaders.
    init(_ settings: OutputDestination.KafkaSettings) throws(OutputError) {
        topic = settings.topic
        guard let conf = rd_kafka_conf_new() else { throw OutputError(.outOfMemory, "librdkafka could not make a configuration (out of memory)") }
        var problem: String?
        func set(_ key: String, _ value: String) {
            var why = [CChar](repeating: 0, count: 512)
            if problem == nil && rd_kafka_conf_set(conf, key, value, &why, why.count) != RD_KAFKA_CONF_OK {
                problem = "\(key): " + KafkaConnection.text(why)
            }
        }
        set("bootstrap.servers", settings.brokers.joined(separator: ","))
        set("client.id", "cvhost-\(Producer.host.prefix(40))")
        set("enable.idempotence", "true")
        set("acks", "all")
        set("compression.type", settings.compression)
        set("linger.ms", "5")
        set("message.timeout.ms", String(KafkaConnection.messageTimeoutMs))
        set("reconnect.backoff.max.ms", "2000")
        if settings.tls || settings.sasl != nil {
            set("security.protocol", (settings.sasl != nil ? "SASL_" : "") + (settings.tls ? "SSL" : "PLAINTEXT"))
        }
        if let ca = settings.caFile {
            if access(ca, R_OK) != 0 { problem = problem ?? "cannot read the CA file \(ca) (ca=): \(Errno.current)" }
            set("ssl.ca.location", ca)
        }
        if let sasl = settings.sasl, let user = settings.user {
            set("sasl.mechanisms", sasl)
            set("sasl.username", user)
            set("sasl.password", settings.password ?? "")
        }
        rd_kafka_conf_set_dr_msg_cb(conf) { _, message, opaque in
            guard let message, let opaque else { return }
            let events = Unmanaged<Events>.fromOpaque(opaque).takeUnretainedValue()
            let id = Int64(Int(bitPattern: message.pointee._private))
            if message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                events.acknowledged.append(id)
                events.up = true
            } else {
                // librdkafka retries what can pass by itself (idempotent producer): a report's error
                // is either the message's time running out (the cluster away: sent again) or final.
                let err = message.pointee.err
                if KafkaConnection.isFinal(err) { events.refused.append(id) } else { events.failed.append(id) }
                let why = String(cString: rd_kafka_err2str(err))
                if !events.failures.contains(why) { events.failures.append(why) }
            }
        }
        rd_kafka_conf_set_error_cb(conf) { rk, err, reason, opaque in
            guard let opaque else { return }
            let events = Unmanaged<Events>.fromOpaque(opaque).takeUnretainedValue()
            let code = rd_kafka_resp_err_t(rawValue: err)
            let why = reason.map { String(cString: $0) } ?? String(cString: rd_kafka_err2str(code))
            if code == RD_KAFKA_RESP_ERR__FATAL {
                var fatal = [CChar](repeating: 0, count: 512)
                _ = rd_kafka_fatal_error(rk, &fatal, fatal.count)
                events.fatal = KafkaConnection.text(fatal)
            } else if code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || code == RD_KAFKA_RESP_ERR__AUTHENTICATION || code == RD_KAFKA_RESP_ERR__SSL {
                events.up = false
                events.downReason = why
            }
        }
        // librdkafka logs to stderr by default: its lines would be unlike cvhost's, and repeat
        // every reconnection. What matters reaches the error callback, said once per outage.
        rd_kafka_conf_set_log_cb(conf, nil)
        rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(events).toOpaque())
        if let problem {
            rd_kafka_conf_destroy(conf)
            throw OutputError(.brokerUnavailable, problem)
        }
        var why = [CChar](repeating: 0, count: 512)
        guard let producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, &why, why.count) else {
            rd_kafka_conf_destroy(conf)
            throw OutputError(.brokerUnavailable, "librdkafka: " + KafkaConnection.text(why))
        }
        rk = producer
        let main = rd_kafka_queue_get_main(rk)
        rd_kafka_queue_io_event_enable(main, wake.writeDescriptor, "1", 1)
        rd_kafka_queue_destroy(main)
        var reason = [CChar](repeating: 0, count: 512)
        let err = cvhost_kafka_topic_ready(rk, topic, 5_000, &reason, reason.count)
        rd_kafka_poll(rk, 0)
        if err != 0 {
            // The producer is destroyed by deinit, which runs for an initializer that throws now.
            let detail = events.downReason.map { " (\($0))" } ?? ""
            throw OutputError(.brokerRefused, "the topic \(topic): \(KafkaConnection.text(reason))\(detail)")
        }
    }

    deinit {
        // Lines still in librdkafka's queue are the sink's to send again (its window has them): purge, do not wait.
        rd_kafka_purge(rk, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
        rd_kafka_poll(rk, 0)
        rd_kafka_destroy(rk)
    }

    /// A C string librdkafka wrote into a buffer.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    var descriptor: Int32 { wake.descriptor }
    var wantsWrite: Bool { false }
    var canPublish: Bool { true }  // librdkafka holds what it is given until the cluster answers
    var isUp: Bool { events.up }

    func publish(_ line: OutputLine) -> PublishOutcome {
        let id = nextID
        // The line's own session (its event id is SESSION-N): for a line an earlier run left in the
        // spool, that run's, not this process's.
        let session = line.eventID.flatMap { id in id.lastIndex(of: "-").map { String(id[..<$0]) } }
        let err = line.bytes.withUnsafeBytes { value in
            let key = line.route.source.map { Array($0.utf8) } ?? []
            return key.withUnsafeBytes { k in
                cvhost_kafka_produce(rk, topic, k.isEmpty ? nil : k.baseAddress, k.count, value.baseAddress, value.count - 1,
                                     line.route.event, session, line.eventID, UnsafeMutableRawPointer(bitPattern: Int(id)))
            }
        }
        switch err {
        case RD_KAFKA_RESP_ERR_NO_ERROR:
            nextID += 1
            return .published(id: id)
        // librdkafka's queue is full, or the producer is being remade: later.
        case RD_KAFKA_RESP_ERR__QUEUE_FULL, RD_KAFKA_RESP_ERR__FATAL, RD_KAFKA_RESP_ERR__STATE: return .notNow
        case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE: return .refused("larger than the broker takes")
        // An unknown topic or partition, an invalid argument: no retry would change it.
        default: return .refused(String(cString: rd_kafka_err2str(err)))
        }
    }

    /// Whether a delivery report's error is final: the message was refused (too large, not
    /// authorised, an unknown or invalid topic), not lost on the way (timed out, purged).
    static func isFinal(_ err: rd_kafka_resp_err_t) -> Bool {
        [RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
         RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED, RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
         RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION, RD_KAFKA_RESP_ERR__INVALID_ARG, RD_KAFKA_RESP_ERR_INVALID_MSG, RD_KAFKA_RESP_ERR_INVALID_RECORD,
         RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE, RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION, RD_KAFKA_RESP_ERR_POLICY_VIOLATION].contains(err)
    }

    func service(readable: Bool, writable: Bool) -> String? {
        if readable { wake.clear() }
        rd_kafka_poll(rk, 0)
        if let fatal = events.fatal { return "the producer failed: \(fatal)" }
        return nil
    }

    func takeSettled() -> SettledLines {
        defer {
            events.acknowledged.removeAll(keepingCapacity: true)
            events.failed.removeAll(keepingCapacity: true)
            events.refused.removeAll(keepingCapacity: true)
            events.failures.removeAll()
        }
        return SettledLines(acknowledged: events.acknowledged, failed: events.failed, refused: events.refused, failures: events.failures)
    }

    /// Why no broker answers, when none does.
    var downReason: String? { events.downReason }

    func cameUp() {}

    /// Waits for what librdkafka holds to be delivered, until `untilNs` (the sink's drain already
    /// waited for the window to empty; this is what is left).
    func close(untilNs: UInt64) {
        let now = HostClock.monotonicNs()
        _ = rd_kafka_flush(rk, Int32(untilNs > now ? (untilNs - now) / 1_000_000 : 0))
    }
}
