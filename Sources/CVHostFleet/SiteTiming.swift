/// The site's times, from its lease time (the buckets' TTL).
struct SiteTiming {
    let ttl: Double
    var ttlNs: UInt64 { UInt64(ttl * 1e9) }
    /// Leases and heartbeats are written every quarter of the TTL.
    var renewNs: UInt64 { UInt64(ttl / 4 * 1e9) }
    /// A lease is held, by this node's clock, until this long after its last renewal was sent:
    /// the TTL less a margin (a tenth of it, at least 1 s), so that it lapses here before there.
    var marginSeconds: Double { max(1, ttl / 10) }
    var validNs: UInt64 { UInt64((ttl - marginSeconds) * 1e9) }
    /// A second a place in an input's order before a free input is taken.
    var claimStepNs: UInt64 { 1_000_000_000 }
    /// A node waits this long after joining (and another node must have been seen so long) before
    /// inputs move to it: the heartbeats of the others have come in by then.
    var settleNs: UInt64 { renewNs + 500_000_000 }
    /// One input given back to a better placed node at a time, this often at most.
    var rebalanceNs: UInt64 { 2 * renewNs }
}
