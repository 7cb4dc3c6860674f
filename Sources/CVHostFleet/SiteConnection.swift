import CNATS
import CVHostCore
import Foundation

/// What the store said when a request failed: its status and the client's words for it.
public struct StoreError: Error, CustomStringConvertible {
    public let status: natsStatus
    public let description: String

    init(_ status: natsStatus, _ what: String) {
        self.status = status
        var text: String?
        var s = NATS_OK
        if let last = nats_GetLastError(&s), s == status { text = String(cString: last) }
        // The client's text is "Error (file.c:line): what": the part after the source's place.
        let said = text.map { t in t.range(of: "): ").map { String(t[$0.upperBound...]) } ?? t } ?? String(cString: natsStatus_GetText(status))
        description = "\(what): \(said)"
    }

    /// The request could not be answered (no server, a timeout): worth trying again.
    var isUnreachable: Bool {
        [NATS_TIMEOUT, NATS_NO_RESPONDERS, NATS_CONNECTION_CLOSED, NATS_NOT_YET_CONNECTED, NATS_CONNECTION_DISCONNECTED, NATS_NO_SERVER,
         NATS_STALE_CONNECTION, NATS_IO_ERROR].contains(status)
    }
}

/// A connection to the site's NATS cluster (the NATS C client, libnats) and its JetStream context:
/// the key-value buckets the site's state is kept in. The client reconnects by itself, to any
/// server of the cluster, for as long as it lives; a request made meanwhile fails (`StoreError`,
/// unreachable) and is the caller's to make again.
final class SiteConnection: @unchecked Sendable {
    // @unchecked Sendable: libnats' connection and JetStream context may be used from any thread.
    let address: FleetAddress
    private let options: OpaquePointer
    private let nc: OpaquePointer
    private let js: OpaquePointer

    /// How long a request to JetStream may take (ms): well inside a lease's renewal.
    static let requestWaitMs: Int64 = 2_000

    /// Connects (blocking, at most `timeout` seconds): nil when no server answered in that time
    /// (the client keeps no connection then).
    /// - Throws: StoreError for what retrying would not mend (the client out of memory, a refused login).
    init?(_ address: FleetAddress, name: String, timeout: Double) throws(StoreError) {
        self.address = address
        var o: OpaquePointer?
        var s = natsOptions_Create(&o)
        guard s == NATS_OK, let o else { throw StoreError(s, "the NATS client could not make its options") }
        var servers = address.servers.map { strdup($0) }
        defer { servers.forEach { free($0) } }
        s = servers.withUnsafeMutableBufferPointer { p in
            p.withMemoryRebound(to: UnsafePointer<CChar>?.self) { natsOptions_SetServers(o, $0.baseAddress, Int32($0.count)) }
        }
        if s == NATS_OK, let user = address.user { s = natsOptions_SetUserInfo(o, user, address.password ?? "") }
        if s == NATS_OK, let token = address.token { s = natsOptions_SetToken(o, token) }
        if s == NATS_OK { s = natsOptions_SetName(o, name) }
        if s == NATS_OK { s = natsOptions_SetTimeout(o, Int64(max(0.1, timeout) * 1000)) }
        // Reconnect for ever, quickly, to whichever server of the cluster answers.
        if s == NATS_OK { s = natsOptions_SetMaxReconnect(o, -1) }
        if s == NATS_OK { s = natsOptions_SetReconnectWait(o, 250) }
        if s == NATS_OK { s = natsOptions_SetPingInterval(o, 2_000) }
        if s == NATS_OK { s = natsOptions_SetMaxPingsOut(o, 2) }
        if s == NATS_OK { s = natsOptions_SetAllowReconnect(o, true) }
        guard s == NATS_OK else {
            natsOptions_Destroy(o)
            throw StoreError(s, "the NATS client's options")
        }
        options = o
        var c: OpaquePointer?
        s = natsConnection_Connect(&c, o)
        guard s == NATS_OK, let c else {
            natsOptions_Destroy(o)
            if s == NATS_NO_SERVER || s == NATS_TIMEOUT || s == NATS_IO_ERROR { return nil }
            throw StoreError(s, "connecting to \(address.shown)")
        }
        nc = c
        var jo = jsOptions()
        jsOptions_Init(&jo)
        jo.Wait = Self.requestWaitMs
        var j: OpaquePointer?
        s = natsConnection_JetStream(&j, c, &jo)
        guard s == NATS_OK, let j else {
            natsConnection_Destroy(c)
            natsOptions_Destroy(o)
            throw StoreError(s, "JetStream")
        }
        js = j
    }

    deinit {
        jsCtx_Destroy(js)
        natsConnection_Close(nc)
        natsConnection_Destroy(nc)
        natsOptions_Destroy(options)
    }

    /// The servers the client knows of (those given and those the cluster told it): the cluster's size.
    var knownServers: Int {
        var list: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        var count: Int32 = 0
        guard natsConnection_GetServers(nc, &list, &count) == NATS_OK, let list else { return address.servers.count }
        for i in 0..<Int(count) { free(list[i]) }
        free(list)
        return Int(count)
    }

    /// The bucket called `name`, made when there is none yet.
    /// - Parameters:
    ///   - ttl: how long a key lasts after its last write (seconds); nil: for ever.
    ///   - replicas: how many servers keep it (the cluster's size, up to 3).
    func bucket(_ name: String, ttl: Double?, history: UInt8, replicas: Int) throws(StoreError) -> KeyValueBucket {
        var kv: OpaquePointer?
        var s = js_KeyValue(&kv, js, name)
        if s == NATS_NOT_FOUND {
            var cfg = kvConfig()
            kvConfig_Init(&cfg)
            s = name.withCString { bucketName in
                cfg.Bucket = bucketName
                cfg.History = history
                cfg.Replicas = Int32(replicas)
                if let ttl { cfg.TTL = Int64(ttl * 1e9) }
                return js_CreateKeyValue(&kv, js, &cfg)
            }
        }
        guard s == NATS_OK, let kv else { throw StoreError(s, "the bucket \(name)") }
        return KeyValueBucket(kv, name: name, connection: self)
    }
}
