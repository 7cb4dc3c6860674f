import CMosquitto
import CVHostCore
import Glibc

/// One connection to a broker through libmosquitto, driven by the MQTT sink's own thread with
/// libmosquitto's external-loop calls (loop_read, loop_write, loop_misc; no thread of
/// libmosquitto's own), so that the sink can sleep in one poll(2) on the socket and on its
/// queue, and a new line goes out at once. A lost connection is not reconnected in place: the
/// sink drops the object and makes a new one, and puts the lines that were in flight back in
/// its queue, so that what is acknowledged is exactly what libmosquitto confirmed.
///
/// Not thread-safe: one thread uses it (libmosquitto calls the callbacks on that thread, from
/// inside loop_read/loop_write/publish).
final class MQTTConnection {
    private let mosq: OpaquePointer
    /// The broker accepted the connection (CONNACK 0).
    private(set) var accepted = false
    /// The broker refused the connection (CONNACK != 0), why.
    private(set) var refusal: String?
    /// Message ids the broker acknowledged (QoS 1, 2) or that were sent (QoS 0), since the last `takeAcknowledged`.
    private var acknowledged: [Int32] = []

    struct Failure: Error {
        let reason: String
    }

    /// What the connection is opened with.
    struct Options {
        var settings: OutputDestination.MQTTSettings
        var clientID: String
        var willTopic: String
        /// In-flight publications libmosquitto may have before it holds more back.
        var window: Int32
    }

    private static let libraryReady: Bool = {
        mosquitto_lib_init()
        return true
    }()

    /// Connects (blocking: the name lookup, TCP and the TLS handshake). The CONNACK comes later,
    /// through `read()`: `accepted` or `refusal`.
    init(_ o: Options) throws(Failure) {
        _ = MQTTConnection.libraryReady
        guard let m = mosquitto_new(o.clientID, true, nil) else { throw Failure(reason: "libmosquitto could not make a client (out of memory)") }
        mosq = m
        mosquitto_user_data_set(m, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_connect_callback_set(m) { _, context, rc in
            MQTTConnection.from(context).connected(rc)
        }
        mosquitto_publish_callback_set(m) { _, context, mid in
            MQTTConnection.from(context).acknowledged.append(mid)
        }
        _ = mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311)
        _ = mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1)
        _ = mosquitto_int_option(m, MOSQ_OPT_SEND_MAXIMUM, o.window)
        if let user = o.settings.user { try check(mosquitto_username_pw_set(m, user, o.settings.password), "user and password") }
        try check(mosquitto_will_set(m, o.willTopic, 7, "offline", 1, true), "last will")
        if o.settings.tls {
            if let ca = o.settings.caFile, access(ca, R_OK) != 0 {
                throw Failure(reason: "cannot read the CA file \(ca) (ca=): \(Errno.current.description)")
            }
            try check(mosquitto_tls_set(m, o.settings.caFile, o.settings.caFile == nil ? "/etc/ssl/certs" : nil, nil, nil, nil), "TLS")
        }
        let rc = mosquitto_connect(m, o.settings.host, o.settings.port, 30)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Failure(reason: MQTTConnection.describe(rc, tls: o.settings.tls)) }
    }

    deinit {
        mosquitto_destroy(mosq)
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> MQTTConnection {
        Unmanaged<MQTTConnection>.fromOpaque(context!).takeUnretainedValue()
    }

    private func check(_ rc: Int32, _ what: String) throws(Failure) {
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Failure(reason: "\(what): \(String(cString: mosquitto_strerror(rc)))") }
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

    var socket: Int32 { mosquitto_socket(mosq) }
    var wantsWrite: Bool { mosquitto_want_write(mosq) }

    /// Publishes one message. - Returns: libmosquitto's result and the message id.
    func publish(topic: String, payload: ArraySlice<UInt8>, qos: Int32, retain: Bool = false) -> (rc: Int32, mid: Int32) {
        var mid: Int32 = 0
        let rc = payload.withUnsafeBytes { raw in
            mosquitto_publish(mosq, &mid, topic, Int32(raw.count), raw.baseAddress, qos, retain)
        }
        return (rc, mid)
    }

    /// Reads what the broker sent (acknowledgements, the CONNACK). - Returns: libmosquitto's result.
    func read() -> Int32 { mosquitto_loop_read(mosq, 1) }
    func write() -> Int32 { mosquitto_loop_write(mosq, 1) }
    /// Keep-alive pings and retries.
    func misc() -> Int32 { mosquitto_loop_misc(mosq) }

    /// The ids acknowledged since the last call.
    func takeAcknowledged() -> [Int32] {
        defer { acknowledged.removeAll(keepingCapacity: true) }
        return acknowledged
    }

    /// Says goodbye to the broker (the will is then not published) and sends what is queued.
    func disconnect() {
        _ = mosquitto_disconnect(mosq)
        _ = mosquitto_loop_write(mosq, 1)
    }
}
