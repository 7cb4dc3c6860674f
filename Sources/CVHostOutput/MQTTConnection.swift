import CMosquitto
import CVHostCore
import CVHostLines
import Glibc

/// `--output mqtt://…`: one connection to a broker through libmosquitto (the reference client),
/// QoS 1 by default, each line on its topic (`MQTTTopics`). Driven by the sink's own thread
/// (`BrokerSink`) with libmosquitto's external-loop calls (loop_read, loop_write, loop_misc; no
/// thread of libmosquitto's own), so that the sink sleeps in one poll(2) on the socket and on its
/// queue, and a new line goes out at once. A lost connection is not reconnected in place: the
/// sink makes a new one and publishes what was in flight again, so that what is acknowledged is
/// exactly what libmosquitto confirmed.
///
/// The status topic says `online` (retained) once connected; the connection's last will says
/// `offline` (retained) when cvhost dies, and cvhost says it itself when it stops.
///
/// Not thread-safe: one thread uses it (libmosquitto calls the callbacks on that thread, from
/// inside loop_read/loop_write/publish).
final class MQTTConnection: BrokerConnection {
    /// In-flight publications at most: enough to fill a loopback or LAN round trip.
    static let windowSize = 100
    private let mosq: OpaquePointer
    /// The broker accepted the connection (CONNACK 0).
    private(set) var accepted = false
    /// The broker refused the connection (CONNACK != 0), why.
    private(set) var refusal: String?
    /// Message ids the broker acknowledged (QoS 1, 2) or that were sent (QoS 0), since the last `takeAcknowledged`.
    private var acknowledged: [Int64] = []
    private var topics: MQTTTopics
    private let settings: OutputDestination.MQTTSettings
    /// The retained states (`counts=`, `discovery=`): all published again each time the connection comes up.
    private let states: MQTTStateTopics?

    /// Unique per run: two cvhost processes never take over each other's connection.
    static let clientID = "cvhost-\(Producer.host.prefix(40))-\(Producer.session.prefix(8))"

    private static let libraryReady: Bool = {
        mosquitto_lib_init()
        return true
    }()

    /// Connects (blocking: the name lookup, TCP and the TLS handshake). The CONNACK comes later,
    /// through `read()`: `accepted` or `refusal`.
    init(_ settings: OutputDestination.MQTTSettings, states: MQTTStateTopics? = nil) throws(OutputError) {
        _ = MQTTConnection.libraryReady
        self.settings = settings
        self.states = states
        topics = MQTTTopics(prefix: settings.prefix, host: Producer.host)
        guard let m = mosquitto_new(MQTTConnection.clientID, true, nil) else { throw OutputError(.outOfMemory, "libmosquitto could not make a client (out of memory)") }
        mosq = m
        mosquitto_user_data_set(m, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_connect_callback_set(m) { _, context, rc in
            MQTTConnection.from(context).connected(rc)
        }
        mosquitto_publish_callback_set(m) { _, context, mid in
            MQTTConnection.from(context).acknowledged.append(Int64(mid))
        }
        _ = mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311)
        _ = mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1)
        _ = mosquitto_int_option(m, MOSQ_OPT_SEND_MAXIMUM, Int32(MQTTConnection.windowSize))
        if let user = settings.user { try check(mosquitto_username_pw_set(m, user, settings.password), "user and password") }
        try check(mosquitto_will_set(m, topics.status, 7, "offline", 1, true), "last will")
        if settings.tls {
            if let ca = settings.caFile, access(ca, R_OK) != 0 {
                throw OutputError(.cannotOpen, "cannot read the CA file \(ca) (ca=)", cause: .current)
            }
            try check(mosquitto_tls_set(m, settings.caFile, settings.caFile == nil ? "/etc/ssl/certs" : nil, nil, nil, nil), "TLS")
        }
        let rc = mosquitto_connect(m, settings.host, settings.port, 30)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw OutputError(.brokerUnavailable, MQTTConnection.describe(rc, tls: settings.tls)) }
    }

    deinit {
        mosquitto_destroy(mosq)
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> MQTTConnection {
        Unmanaged<MQTTConnection>.fromOpaque(context!).takeUnretainedValue()
    }

    private func check(_ rc: Int32, _ what: String) throws(OutputError) {
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw OutputError(.brokerUnavailable, "\(what): \(String(cString: mosquitto_strerror(rc)))") }
    }

    private func connected(_ rc: Int32) {
        if rc == 0 {
            accepted = true
        } else {
            refusal = String(cString: mosquitto_connack_string(rc)) + (rc == 4 || rc == 5 ? " (check the user and password)" : "")
        }
    }

    /// A failed call's reason, for people.
    static func describe(_ rc: Int32, tls: Bool) -> String {
        switch rc {
        case MOSQ_ERR_ERRNO.rawValue: Errno.current.description
        case MOSQ_ERR_TLS.rawValue, MOSQ_ERR_TLS_HANDSHAKE.rawValue:
            "TLS handshake failed (is ca= the CA that signed the broker's certificate, and the host the name in it?)"
        case MOSQ_ERR_EAI.rawValue: "the broker's host name could not be resolved"
        case MOSQ_ERR_CONN_LOST.rawValue: "the connection was lost"
        default: String(cString: mosquitto_strerror(rc))
        }
    }

    // MARK: - BrokerConnection

    var descriptor: Int32 { mosquitto_socket(mosq) }
    var wantsWrite: Bool { mosquitto_want_write(mosq) }
    var canPublish: Bool { accepted }
    var isUp: Bool { accepted }

    func publish(_ line: OutputLine) -> PublishOutcome {
        // The payload is the line without its newline: a subscriber prints it as stdout would. A
        // retained state (MQTTStateTopics) carries its whole topic as its route's source.
        let retained = line.route.event == MQTTStateTopics.retainedEvent
        let topic = retained ? line.route.source ?? "" : topics.topic(for: line.route)
        let (rc, mid) = publish(topic: topic, payload: line.bytes.dropLast(), qos: settings.qos, retain: retained)
        if rc == MOSQ_ERR_SUCCESS.rawValue { return .published(id: Int64(mid)) }
        if rc == MOSQ_ERR_PAYLOAD_SIZE.rawValue || rc == MOSQ_ERR_OVERSIZE_PACKET.rawValue { return .refused("larger than the broker takes") }
        // A topic MQTT does not take (a level the client refuses): never, however often it is tried.
        if rc == MOSQ_ERR_INVAL.rawValue || rc == MOSQ_ERR_MALFORMED_UTF8.rawValue || rc == MOSQ_ERR_QOS_NOT_SUPPORTED.rawValue {
            return .refused("the topic \(topic) is refused: \(String(cString: mosquitto_strerror(rc)))")
        }
        return .notNow  // the connection is going: the next service says why
    }

    func service(readable: Bool, writable: Bool) -> String? {
        var rc = MOSQ_ERR_SUCCESS.rawValue
        if readable { rc = mosquitto_loop_read(mosq, 1) }
        if rc == MOSQ_ERR_SUCCESS.rawValue && wantsWrite && writable { rc = mosquitto_loop_write(mosq, 1) }
        // Keep-alive pings and retries.
        if rc == MOSQ_ERR_SUCCESS.rawValue { rc = mosquitto_loop_misc(mosq) }
        if let refusal { return "the broker refused the connection: \(refusal)" }
        if rc != MOSQ_ERR_SUCCESS.rawValue { return MQTTConnection.describe(rc, tls: settings.tls) }
        return nil
    }

    func takeSettled() -> SettledLines {
        defer { acknowledged.removeAll(keepingCapacity: true) }
        return SettledLines(acknowledged: acknowledged)
    }

    func cameUp() {
        _ = publish(topic: topics.status, payload: Array("online".utf8)[...], qos: 1, retain: true)
        // A broker that restarted without its retained messages has them again (what waits in the
        // queue is older, or newer and published after these).
        for state in states?.all() ?? [] {
            _ = publish(topic: state.route.source ?? "", payload: state.bytes.dropLast(), qos: 1, retain: true)
        }
    }

    /// Stopping, not dying: says so (the will is for dying), then leaves.
    func close(untilNs: UInt64) {
        guard accepted else { return }
        _ = publish(topic: topics.status, payload: Array("offline".utf8)[...], qos: 1, retain: true)
        while wantsWrite && HostClock.monotonicNs() < untilNs {
            var fd = pollfd(fd: descriptor, events: Int16(POLLIN | POLLOUT), revents: 0)
            _ = poll(&fd, 1, 100)
            if service(readable: fd.revents & Int16(POLLIN) != 0, writable: fd.revents & Int16(POLLOUT) != 0) != nil { return }
        }
        _ = mosquitto_disconnect(mosq)
        _ = mosquitto_loop_write(mosq, 1)
    }

    /// Publishes one message. - Returns: libmosquitto's result and the message id.
    private func publish(topic: String, payload: ArraySlice<UInt8>, qos: Int32, retain: Bool = false) -> (rc: Int32, mid: Int32) {
        var mid: Int32 = 0
        let rc = payload.withUnsafeBytes { raw in
            mosquitto_publish(mosq, &mid, topic, Int32(raw.count), raw.baseAddress, qos, retain)
        }
        return (rc, mid)
    }
}
