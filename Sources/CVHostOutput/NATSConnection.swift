import CNATS
import CVHostCore
import CVHostLines
import Glibc

/// `--output nats://HOST:PORT/SUBJECT`: lines published to a JetStream stream through the NATS C
/// client, each acknowledged by the server once the stream has stored it, each with `Nats-Msg-Id`
/// set to the line's event id, so that the server drops a line sent again that it already has
/// (within the stream's duplicate window, two minutes by default). Subjects: `NATSSubjects`. The
/// stream (`stream=`, CVHOST) is made, taking SUBJECT.>, when the server has none of that name.
///
/// The client's own reconnection is off: a lost connection is the sink's to mend (a new one, and
/// what was in flight published again), as for the other brokers. Acknowledgements arrive on the
/// client's thread; they are handed to the sink's thread through `Shared` and a pipe.
final class NATSConnection: BrokerConnection {
    /// Publications awaiting the server's acknowledgement at most.
    static let windowSize = 2_000
    /// How long an acknowledgement may take before the line is published again.
    static let ackWaitMs: Int64 = 5_000

    private let options: OpaquePointer
    private let nc: OpaquePointer
    private let js: OpaquePointer
    private let shared: Shared
    private var subjects: NATSSubjects
    private var nextID: Int64 = 1
    private let name: String

    /// What the client's thread tells the sink's: acknowledgements, and a lost connection.
    private final class Shared: @unchecked Sendable {
        // @unchecked Sendable: every field is touched with `lock` held.
        let lock = ConditionLock()
        var ids: [UnsafeMutableRawPointer: Int64] = [:]
        var acknowledged: [Int64] = []
        var failed: [Int64] = []
        /// Why acknowledgements failed since the sink last asked: each distinct reason once.
        var failures: [String] = []
        var lost: String?
        /// The client's last callback for the connection came: none comes after it.
        var closed = false
        let wake = WakePipe("the NATS output")
    }

    /// Closes the connection and waits (at most 2 s) for the client's closed callback, the last it
    /// makes (the others may come from its threads until then), then destroys it.
    private static func shutDown(_ nc: OpaquePointer, _ shared: Shared) {
        natsConnection_Close(nc)
        shared.lock.withLock {
            let until = HostClock.monotonicNs() + 2_000_000_000
            while !shared.closed && shared.lock.wait(untilMonotonicNs: until) {}
        }
        natsConnection_Destroy(nc)
    }

    /// Connects (blocking), and finds or makes the stream.
    init(_ settings: OutputDestination.NATSSettings, name: String) throws(OutputError) {
        self.name = name
        subjects = NATSSubjects(prefix: settings.subject, host: Producer.host)
        shared = Shared()
        // The callbacks' reference: released by the closed callback, the client's last (or at once,
        // when no connection was made).
        let retained = Unmanaged.passRetained(shared)
        let closure = retained.toOpaque()
        var o: OpaquePointer?
        guard natsOptions_Create(&o) == NATS_OK, let o else {
            retained.release()
            throw OutputError(.outOfMemory, "the NATS client could not make its options (out of memory)")
        }
        options = o
        let host = settings.host.contains(":") ? "[\(settings.host)]" : settings.host
        var s = natsOptions_SetURL(o, "nats://\(host):\(settings.port)")
        if s == NATS_OK, let user = settings.user { s = natsOptions_SetUserInfo(o, user, settings.password ?? "") }
        if s == NATS_OK, let token = settings.token { s = natsOptions_SetToken(o, token) }
        if s == NATS_OK && settings.tls { s = natsOptions_SetSecure(o, true) }
        if s == NATS_OK, let ca = settings.caFile {
            guard access(ca, R_OK) == 0 else {
                natsOptions_Destroy(o)
                retained.release()
                throw OutputError(.cannotOpen, "cannot read the CA file \(ca) (ca=)", cause: .current)
            }
            s = natsOptions_LoadCATrustedCertificates(o, ca)
        }
        if s == NATS_OK { s = natsOptions_SetAllowReconnect(o, false) }
        if s == NATS_OK { s = natsOptions_SetTimeout(o, 5_000) }
        if s == NATS_OK { s = natsOptions_SetName(o, "cvhost-\(Producer.host.prefix(40))") }
        if s == NATS_OK { s = natsOptions_SetPingInterval(o, 5_000) }
        if s == NATS_OK {
            s = natsOptions_SetDisconnectedCB(o, { _, closure in
                let shared = Unmanaged<Shared>.fromOpaque(closure!).takeUnretainedValue()
                shared.lock.withLock { shared.lost = shared.lost ?? "the connection was lost" }
                shared.wake.wake()
            }, closure)
        }
        if s == NATS_OK {
            s = natsOptions_SetClosedCB(o, { _, closure in
                let retained = Unmanaged<Shared>.fromOpaque(closure!)
                let shared = retained.takeUnretainedValue()
                shared.lock.withLock {
                    shared.closed = true
                    shared.lock.broadcast()
                }
                retained.release()
            }, closure)
        }
        var connection: OpaquePointer?
        if s == NATS_OK { s = natsConnection_Connect(&connection, o) }
        guard s == NATS_OK, let connection else {
            natsOptions_Destroy(o)
            retained.release()
            throw OutputError(.brokerUnavailable, NATSConnection.describe(s))
        }
        nc = connection
        var jo = jsOptions()
        jsOptions_Init(&jo)
        // The client's own bound on acknowledgements awaited: above the sink's window (which never
        // has more in flight), so that js_PublishMsgAsync never blocks the sink's thread on it; the
        // margin covers publications whose acknowledgement has come but not yet been handed over.
        jo.PublishAsync.MaxPending = Int64(NATSConnection.windowSize + 100)
        jo.PublishAsync.AckHandlerClosure = closure
        jo.PublishAsync.AckHandler = { _, msg, ack, error, closure in
            let shared = Unmanaged<Shared>.fromOpaque(closure!).takeUnretainedValue()
            shared.lock.withLock {
                guard let msg, let id = shared.ids.removeValue(forKey: UnsafeMutableRawPointer(msg)) else { return }
                if ack != nil && error == nil {
                    shared.acknowledged.append(id)
                } else {
                    shared.failed.append(id)
                    if let error {
                        let why = error.pointee.ErrText.map { String(cString: $0) } ?? NATSConnection.describe(error.pointee.Err)
                        if !shared.failures.contains(why) { shared.failures.append(why) }
                    }
                }
            }
            natsMsg_Destroy(msg)
            shared.wake.wake()
        }
        var context: OpaquePointer?
        s = natsConnection_JetStream(&context, nc, &jo)
        guard s == NATS_OK, let context else {
            NATSConnection.shutDown(nc, shared)
            natsOptions_Destroy(o)
            throw OutputError(.brokerRefused, "JetStream: " + NATSConnection.describe(s))
        }
        js = context
        // Should it fail, deinit (which runs for an initializer that throws once every property is set) closes it all.
        try ensureStream(settings.stream)
    }

    deinit {
        jsCtx_Destroy(js)
        NATSConnection.shutDown(nc, shared)
        natsOptions_Destroy(options)
        // Every message still awaiting its acknowledgement was destroyed with the connection.
        shared.lock.withLock { shared.ids.removeAll() }
    }

    /// The stream named `stream`, made (file storage, taking SUBJECT.>) if the server has none.
    private func ensureStream(_ stream: String) throws(OutputError) {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(rawValue: 0)
        var s = js_GetStreamInfo(&info, js, stream, nil, &code)
        if s == NATS_OK {
            defer { jsStreamInfo_Destroy(info) }
            // A stream of that name that takes other subjects would never store a line (each
            // publication would wait for its acknowledgement in vain).
            let taken = info?.pointee.Config.map { c in (0..<Int(c.pointee.SubjectsLen)).compactMap { c.pointee.Subjects[$0].map { String(cString: $0) } } } ?? []
            if !taken.contains(subjects.wildcard) && !taken.contains(">") {
                throw OutputError(.brokerRefused, "the server's stream \(stream) takes \(taken.joined(separator: ", ")), not \(subjects.wildcard): name another stream "
                                    + "with stream=NAME (made for \(subjects.wildcard) if missing), or give this output that stream's subject")
            }
            return
        }
        guard code == JSStreamNotFoundErr else {
            if s == NATS_NO_RESPONDERS || s == NATS_TIMEOUT {
                throw OutputError(.brokerRefused, "the server has no JetStream (start nats-server with -js, or enable it in its configuration)")
            }
            throw OutputError(.brokerRefused, "the stream \(stream): " + NATSConnection.describe(s))
        }
        var config = jsStreamConfig()
        jsStreamConfig_Init(&config)
        let wildcard = subjects.wildcard
        s = stream.withCString { streamName in
            wildcard.withCString { subject in
                var list: [UnsafePointer<CChar>?] = [subject]
                return list.withUnsafeMutableBufferPointer { subjectsList in
                    config.Name = streamName
                    config.Subjects = subjectsList.baseAddress
                    config.SubjectsLen = 1
                    config.Storage = js_FileStorage
                    return js_AddStream(&info, js, &config, nil, &code)
                }
            }
        }
        guard s == NATS_OK else {
            if code == JSStreamSubjectOverlapErr {
                throw OutputError(.brokerRefused, "cannot make the stream \(stream) for \(wildcard): another stream of the server takes those subjects; "
                                    + "name it with stream=NAME, or give this output a subject of its own (nats://host/SUBJECT)")
            }
            throw OutputError(.brokerRefused, "cannot make the stream \(stream) for \(wildcard): " + NATSConnection.describe(s) + (code.rawValue != 0 ? " (JetStream error \(code.rawValue))" : ""))
        }
        jsStreamInfo_Destroy(info)
        Log.info("made the JetStream stream \(stream) for \(wildcard)", source: name)
    }

    static func describe(_ s: natsStatus) -> String {
        var last = NATS_OK
        let detail = nats_GetLastError(&last).map { String(cString: $0) } ?? ""
        let text = String(cString: natsStatus_GetText(s))
        return detail.isEmpty || detail == text ? text : "\(text): \(detail)"
    }

    // MARK: - BrokerConnection

    var descriptor: Int32 { shared.wake.descriptor }
    var wantsWrite: Bool { false }
    var canPublish: Bool { true }
    var isUp: Bool { true }

    func publish(_ line: OutputLine) -> PublishOutcome {
        var msg: OpaquePointer?
        let subject = subjects.subject(for: line.route)
        var s = line.bytes.withUnsafeBytes { raw in
            natsMsg_Create(&msg, subject, nil, raw.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(raw.count - 1))
        }
        guard s == NATS_OK, let created = msg else { return .notNow }
        let id = nextID
        let key = UnsafeMutableRawPointer(created)
        shared.lock.withLock { shared.ids[key] = id }
        var po = jsPubOptions()
        jsPubOptions_Init(&po)
        po.MaxWait = NATSConnection.ackWaitMs
        s = (line.eventID ?? "").withCString { eventID in
            if line.eventID != nil { po.MsgId = eventID }
            return js_PublishMsgAsync(js, &msg, &po)
        }
        guard s == NATS_OK else {
            // Not taken: still ours.
            shared.lock.withLock { _ = shared.ids.removeValue(forKey: key) }
            natsMsg_Destroy(created)
            return s == NATS_MAX_PAYLOAD ? .refused("larger than the server takes (its max_payload)") : .notNow
        }
        nextID += 1
        return .published(id: id)
    }

    func service(readable: Bool, writable: Bool) -> String? {
        if readable { shared.wake.clear() }
        return shared.lock.withLock { shared.lost }
    }

    func takeSettled() -> SettledLines {
        shared.lock.withLock {
            defer {
                shared.acknowledged.removeAll(keepingCapacity: true)
                shared.failed.removeAll(keepingCapacity: true)
                shared.failures.removeAll()
            }
            return SettledLines(acknowledged: shared.acknowledged, failed: shared.failed, failures: shared.failures)
        }
    }

    func cameUp() {}

    /// Waits for the acknowledgements of what is in flight until `untilNs`, then closes.
    func close(untilNs: UInt64) {
        let now = HostClock.monotonicNs()
        if untilNs > now {
            var po = jsPubOptions()
            jsPubOptions_Init(&po)
            po.MaxWait = Int64((untilNs - now) / 1_000_000) + 1
            _ = js_PublishAsyncComplete(js, &po)
        }
        natsConnection_Close(nc)
    }
}
