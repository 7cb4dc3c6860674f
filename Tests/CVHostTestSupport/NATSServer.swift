import CNATS
import Foundation

/// Debian's nats-server with JetStream on a loopback port for a test; its store in a folder of
/// its own, kept across a stop and a start (as a restarted service keeps it).
public final class NATSServer: @unchecked Sendable {
    // @unchecked Sendable: `process` is replaced only by start()/stop(), called by one test at a time.
    public let port: Int
    public let folder: String
    /// Further arguments: a cluster's (NATSCluster).
    private let extra: [String]
    private var process: Process?

    public init() throws {
        folder = TestFolders.make("nats")
        port = freeLoopbackPort()
        extra = []
        try start()
    }

    /// A server of a cluster, not yet started.
    init(port: Int, extra: [String]) {
        folder = TestFolders.make("nats")
        self.port = port
        self.extra = extra
    }

    /// Starts the server (again, on the same port and store) and waits until it accepts connections.
    public func start() throws {
        // Its log (a banner at every start) in its folder, not in the tests' output.
        let p = Tool.withSignalsUnblocked("/usr/sbin/nats-server", ["-js", "-a", "127.0.0.1", "-p", "\(port)", "-sd", folder + "/store",
                                                                     "-l", folder + "/nats-server.log"] + extra)
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.standardError
        p.standardInput = FileHandle.nullDevice
        try p.run()
        process = p
        try waitUntilListening(p, port: port, name: "nats-server")
    }

    /// Whether it runs now.
    public var isRunning: Bool { process?.isRunning ?? false }

    /// Stops the server: SIGTERM (it stores what it has, as a stopped service does), or SIGKILL.
    public func stop(signal: Int32 = SIGTERM) {
        guard let p = process, p.isRunning else { return }
        kill(p.processIdentifier, signal)
        p.waitUntilExit()
    }

    /// Every message the stream holds for `subjects`, in the stream's order, read with the NATS C
    /// client (an ordered push consumer): (subject, Nats-Msg-Id, payload).
    public func messages(subjects: String = ">") throws -> [(subject: String, id: String, payload: String)] {
        var nc: OpaquePointer?
        var s = natsConnection_ConnectTo(&nc, "nats://127.0.0.1:\(port)")
        guard s == NATS_OK, let nc else { throw failure("connect", s) }
        defer { natsConnection_Destroy(nc) }
        var js: OpaquePointer?
        s = natsConnection_JetStream(&js, nc, nil)
        guard s == NATS_OK, let js else { throw failure("JetStream", s) }
        defer { jsCtx_Destroy(js) }
        var options = jsSubOptions()
        jsSubOptions_Init(&options)
        options.Ordered = true
        var sub: OpaquePointer?
        var code = jsErrCode(rawValue: 0)
        s = js_SubscribeSync(&sub, js, subjects, nil, &options, &code)
        guard s == NATS_OK, let sub else { throw failure("subscribe", s) }
        defer { natsSubscription_Destroy(sub) }
        var out: [(String, String, String)] = []
        while true {
            var msg: OpaquePointer?
            guard natsSubscription_NextMsg(&msg, sub, 1500) == NATS_OK, let msg else { break }
            var id: UnsafePointer<CChar>?
            _ = natsMsgHeader_Get(msg, "Nats-Msg-Id", &id)
            let data = natsMsg_GetData(msg).map { String(decoding: UnsafeRawBufferPointer(start: $0, count: Int(natsMsg_GetDataLength(msg))), as: UTF8.self) } ?? ""
            out.append((String(cString: natsMsg_GetSubject(msg)), id.map { String(cString: $0) } ?? "", data))
            natsMsg_Destroy(msg)
        }
        return out
    }

    private func failure(_ what: String, _ s: natsStatus) -> Error {
        CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "NATS \(what): \(String(cString: natsStatus_GetText(s)))"])
    }

    deinit {
        stop(signal: SIGKILL)
    }
}

/// Three nats-servers on loopback ports forming one JetStream cluster (each its own store folder),
/// as a site's store is run: any one may go and the others go on (R3 buckets).
public final class NATSCluster: @unchecked Sendable {
    public let servers: [NATSServer]

    public init(size: Int = 3) throws {
        let ports = (0..<size).map { _ in (client: freeLoopbackPort(), route: freeLoopbackPort()) }
        let routes = ports.map { "nats://127.0.0.1:\($0.route)" }.joined(separator: ",")
        servers = ports.enumerated().map { i, p in
            NATSServer(port: p.client, extra: ["--server_name", "n\(i + 1)", "--cluster_name", "cvhost-test", "--cluster", "nats://127.0.0.1:\(p.route)",
                                              "--routes", routes])
        }
        for s in servers { try s.start() }
        try waitForJetStream()
    }

    /// nats://HOST:PORT,... of every server, for a URL.
    public var hosts: String { servers.map { "127.0.0.1:\($0.port)" }.joined(separator: ",") }

    /// Waits (at most 30 s) until the cluster has elected its JetStream leader: a stream can be made.
    public func waitForJetStream() throws {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            var nc: OpaquePointer?
            if natsConnection_ConnectTo(&nc, "nats://127.0.0.1:\(servers[0].port)") == NATS_OK, let nc {
                defer { natsConnection_Destroy(nc) }
                var js: OpaquePointer?
                if natsConnection_JetStream(&js, nc, nil) == NATS_OK, let js {
                    defer { jsCtx_Destroy(js) }
                    var info: UnsafeMutablePointer<jsAccountInfo>?
                    var code = jsErrCode(rawValue: 0)
                    if js_GetAccountInfo(&info, js, nil, &code) == NATS_OK {
                        jsAccountInfo_Destroy(info)
                        return
                    }
                }
            }
            usleep(250_000)
        }
        throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "the NATS cluster elected no JetStream leader within 30 s"])
    }

    /// Writes `value` under `key` in `bucket` as any NATS client may (a key another client wrote).
    public func put(bucket: String, key: String, value: String) throws {
        try withBucket(bucket) { kv in
            var rev: UInt64 = 0
            guard kvStore_PutString(&rev, kv, key, value) == NATS_OK else { throw failure("put \(key)") }
        }
    }

    /// The value of `key` in `bucket` now, as any NATS client reads it; nil when there is none.
    public func get(bucket: String, key: String) throws -> String? {
        try withBucket(bucket) { kv in
            var e: OpaquePointer?
            guard kvStore_Get(&e, kv, key) == NATS_OK, let e else { return nil }
            defer { kvEntry_Destroy(e) }
            return kvEntry_ValueString(e).map { String(cString: $0) }
        }
    }

    /// `body` with the key-value bucket, on a connection of its own to the first server.
    private func withBucket<T>(_ bucket: String, _ body: (OpaquePointer) throws -> T) throws -> T {
        var nc: OpaquePointer?
        guard natsConnection_ConnectTo(&nc, "nats://127.0.0.1:\(servers[0].port)") == NATS_OK, let nc else { throw failure("connect") }
        defer { natsConnection_Destroy(nc) }
        var js: OpaquePointer?
        guard natsConnection_JetStream(&js, nc, nil) == NATS_OK, let js else { throw failure("JetStream") }
        defer { jsCtx_Destroy(js) }
        var kv: OpaquePointer?
        guard js_KeyValue(&kv, js, bucket) == NATS_OK, let kv else { throw failure("bucket \(bucket)") }
        defer { kvStore_Destroy(kv) }
        return try body(kv)
    }

    private func failure(_ what: String) -> Error {
        CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "NATS \(what) failed"])
    }
}
