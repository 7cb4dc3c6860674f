import CNATS
import Foundation

/// One JetStream key-value bucket (libnats' kvStore): a key's value by revision, written only if it
/// is still what the writer last read (`create`, `update`): the compare-and-set leases are made of.
final class KeyValueBucket: @unchecked Sendable {
    // @unchecked Sendable: libnats' kvStore may be used from any thread.
    let name: String
    private let kv: OpaquePointer
    /// Held so that the connection outlives the bucket (the kvStore uses its JetStream context).
    private let connection: SiteConnection

    init(_ kv: OpaquePointer, name: String, connection: SiteConnection) {
        self.kv = kv
        self.name = name
        self.connection = connection
    }

    deinit {
        kvStore_Destroy(kv)
    }

    struct Entry: Sendable, Equatable {
        let key: String
        let value: [UInt8]
        let revision: UInt64
        /// A delete or purge: the key is gone (value empty).
        let deleted: Bool

        init(key: String, value: [UInt8], revision: UInt64, deleted: Bool) {
            self.key = key
            self.value = value
            self.revision = revision
            self.deleted = deleted
        }

        init(_ e: OpaquePointer) {
            key = String(cString: kvEntry_Key(e))
            let n = Int(kvEntry_ValueLen(e))
            value = n > 0 ? kvEntry_Value(e).map { Array(UnsafeRawBufferPointer(start: $0, count: n)) } ?? [] : []
            revision = kvEntry_Revision(e)
            deleted = kvEntry_Operation(e) != kvOp_Put
        }
    }

    /// The key's value now; nil when there is none (never written, deleted, or expired).
    func get(_ key: String) throws(StoreError) -> Entry? {
        var e: OpaquePointer?
        let s = kvStore_Get(&e, kv, key)
        if s == NATS_NOT_FOUND { return nil }
        guard s == NATS_OK, let e else { throw StoreError(s, "reading \(key) in \(name)") }
        defer { kvEntry_Destroy(e) }
        return Entry(e)
    }

    /// Writes the key only if it has no value. - Returns: the new revision.
    func create(_ key: String, _ value: [UInt8]) throws(StoreError) -> UInt64 {
        var rev: UInt64 = 0
        let s = value.withUnsafeBytes { kvStore_Create(&rev, kv, key, $0.baseAddress, Int32($0.count)) }
        guard s == NATS_OK else { throw StoreError(s, "creating \(key) in \(name)") }
        return rev
    }

    /// Writes the key only if its revision is still `last`. - Returns: the new revision.
    func update(_ key: String, _ value: [UInt8], last: UInt64) throws(StoreError) -> UInt64 {
        var rev: UInt64 = 0
        let s = value.withUnsafeBytes { kvStore_Update(&rev, kv, key, $0.baseAddress, Int32($0.count), last) }
        guard s == NATS_OK else { throw StoreError(s, "updating \(key) in \(name)") }
        return rev
    }

    /// Writes the key whatever it holds. - Returns: the new revision.
    @discardableResult
    func put(_ key: String, _ value: [UInt8]) throws(StoreError) -> UInt64 {
        var rev: UInt64 = 0
        let s = value.withUnsafeBytes { kvStore_Put(&rev, kv, key, $0.baseAddress, Int32($0.count)) }
        guard s == NATS_OK else { throw StoreError(s, "writing \(key) in \(name)") }
        return rev
    }

    func delete(_ key: String) throws(StoreError) {
        let s = kvStore_Delete(kv, key)
        guard s == NATS_OK else { throw StoreError(s, "deleting \(key) in \(name)") }
    }

    /// Every key's value, then each write as it is made (deletes included).
    func watch() throws(StoreError) -> KeyValueWatcher {
        var w: OpaquePointer?
        var o = kvWatchOptions()
        kvWatchOptions_Init(&o)
        let s = kvStore_WatchAll(&w, kv, &o)
        guard s == NATS_OK, let w else { throw StoreError(s, "watching \(name)") }
        return KeyValueWatcher(w, bucket: self)
    }

    /// The bucket's TTL (seconds), 0 for none.
    func ttl() throws(StoreError) -> Double {
        var st: OpaquePointer?
        let s = kvStore_Status(&st, kv)
        guard s == NATS_OK, let st else { throw StoreError(s, "the status of \(name)") }
        defer { kvStatus_Destroy(st) }
        return Double(kvStatus_TTL(st)) / 1e9
    }
}

/// A bucket's keys as they change (libnats' kvWatcher: an ordered consumer, made anew by the client
/// when it misses something). One thread reads it.
final class KeyValueWatcher: @unchecked Sendable {
    // @unchecked Sendable: read by one thread at a time.
    private let w: OpaquePointer
    /// Held so that the bucket (and its connection) outlive the watcher.
    private let bucket: KeyValueBucket

    init(_ w: OpaquePointer, bucket: KeyValueBucket) {
        self.w = w
        self.bucket = bucket
    }

    deinit {
        kvWatcher_Destroy(w)
    }

    enum Change {
        case entry(KeyValueBucket.Entry)
        /// Every key's value at the start has been given.
        case caughtUp
    }

    /// The next change, waiting at most `timeoutMs`; nil when none came.
    func next(timeoutMs: Int64) -> Change? {
        var e: OpaquePointer?
        let s = kvWatcher_Next(&e, w, max(1, timeoutMs))
        guard s == NATS_OK else { return nil }
        guard let e else { return .caughtUp }
        defer { kvEntry_Destroy(e) }
        return .entry(KeyValueBucket.Entry(e))
    }
}

extension KeyValueBucket {
    /// Every key's value now (a watcher read until it has given them all).
    func all(timeoutMs: Int64 = 2_000) throws(StoreError) -> [Entry] {
        let w = try watch()
        var out: [Entry] = []
        let until = DispatchTime.now().uptimeNanoseconds + UInt64(timeoutMs) * 1_000_000
        while DispatchTime.now().uptimeNanoseconds < until {
            switch w.next(timeoutMs: 200) {
            case .entry(let e)?: if !e.deleted { out.append(e) }
            case .caughtUp?: return out
            case nil: continue
            }
        }
        throw StoreError(NATS_TIMEOUT, "reading \(name)")
    }
}
