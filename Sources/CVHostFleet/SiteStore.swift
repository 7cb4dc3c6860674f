import CVHostCore
import Foundation

/// A site's state in JetStream key-value buckets (replicated by the cluster, `replicas` up to 3):
///
///     cvhost-SITE          format            {"format":1}
///                          inputs.NAME       {"input":"rtsp://cam/1","plugins":["detect"]}      (SiteInput)
///                          zones.NAME, lines.NAME, tracks.PLUGIN                                (SiteRules)
///                          counts.NAME       {"detect":{"lines":{...},"zones":{...}}}           (CountTotals by plugin)
///     cvhost-SITE-nodes    NODE              heartbeat, lasts the TTL                           (SiteNode)
///     cvhost-SITE-leases   NAME              {"node":"gate-1"}, lasts the TTL unless renewed    (SiteLease)
///
/// The buckets are made on first use; the leases' and nodes' TTL is the site's lease time (10 s),
/// set by whoever made them and read back by every node.
final class SiteStore: Sendable {
    static let format = 1
    static let inputPrefix = "inputs."
    /// `counts.NAME`: what input NAME's tracked plugins counted, by plugin (`CountTotals`), kept by
    /// its node every few seconds: the next node to run it goes on from them.
    static let countsPrefix = "counts."

    let connection: SiteConnection
    let desired: KeyValueBucket
    let nodes: KeyValueBucket
    let leases: KeyValueBucket
    /// How long a lease lasts unwritten (the buckets' TTL), seconds.
    let ttl: Double

    static func bucketNames(site: String) -> (desired: String, nodes: String, leases: String) {
        ("cvhost-\(site)", "cvhost-\(site)-nodes", "cvhost-\(site)-leases")
    }

    /// Opens (or makes) the site's buckets.
    init(_ connection: SiteConnection, ttl: Double = 10) throws(StoreError) {
        self.connection = connection
        let names = Self.bucketNames(site: connection.address.site)
        let replicas = min(3, max(1, connection.knownServers))
        desired = try connection.bucket(names.desired, ttl: nil, history: 1, replicas: replicas)
        nodes = try connection.bucket(names.nodes, ttl: ttl, history: 1, replicas: replicas)
        leases = try connection.bucket(names.leases, ttl: ttl, history: 1, replicas: replicas)
        let set = try leases.ttl()
        self.ttl = set > 0 ? set : ttl
    }

    /// A key is 1-255 of letters, digits, `-`, `_`, `=` and `.`, without an empty part between dots
    /// (NATS subjects' tokens); an input's name is one too.
    static func isKeyPart(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 200 && !s.hasPrefix(".") && !s.hasSuffix(".") && !s.contains("..")
            && s.utf8.allSatisfy { c in (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c == 0x2D || c == 0x2E || c == 0x3D }
    }

    /// The store's format: written when the site is new.
    /// - Returns: nil when this cvhost reads it; else what to say.
    func checkFormat() throws(StoreError) -> String? {
        if let e = try desired.get("format") {
            guard let f = try? JSONDecoder().decode(SiteFormat.self, from: Data(e.value)) else {
                return "the site's store has a format key that is not {\"format\":N}: fix or delete it (\(desired.name), key format)"
            }
            return f.format > Self.format
                ? "the site's store is of format \(f.format), newer than this cvhost's (\(Self.format)): upgrade cvhost on this node" : nil
        }
        do {
            _ = try desired.create("format", Array(#"{"format":\#(Self.format)}"#.utf8))
        } catch where !error.isUnreachable {
            // Another node wrote it first.
        }
        return nil
    }

    /// A value read: its JSON decoded, or why it is not one (a line naming the bucket and key).
    static func decode<T: Decodable>(_ type: T.Type, _ e: KeyValueBucket.Entry, in bucket: String, what: String) -> Result<T, Malformed> {
        do {
            return .success(try JSONDecoder().decode(T.self, from: Data(e.value)))
        } catch {
            return .failure(Malformed(description: "\(bucket) key \(e.key) (revision \(e.revision)) is not \(what): ignored until it is written anew (\(Self.reason(error)))"))
        }
    }

    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    private static func reason(_ error: Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, _)?: "it has no \"\(key.stringValue)\""
        case .typeMismatch(_, let c)?, .valueNotFound(_, let c)?: "\"\(c.codingPath.map(\.stringValue).joined(separator: "."))\" is of the wrong type"
        case .dataCorrupted?: "not JSON"
        default: "\(error)"
        }
    }

    static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? e.encode(value)) ?? Data())
    }
}
