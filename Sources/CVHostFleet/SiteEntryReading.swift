/// What another client may have written in a site's buckets, read as a node reads it, with no
/// server: for the fuzz target `site-entries` (fuzz/targets), which feeds it any key and value.
package enum SiteEntryReading {
    /// Reads `value` under `key` in `bucket` (0: the site's own, 1: the nodes', 2: the leases') into
    /// a view of the site, then places its inputs. - Returns: whether every input placed is one the
    /// view holds, on a node it holds (the promise a malformed value must not break).
    package static func read(bucket: Int, key: String, value: [UInt8], deleted: Bool) -> Bool {
        var view = SiteView()
        let e = KeyValueBucket.Entry(key: key, value: value, revision: 1, deleted: deleted)
        let now: UInt64 = 100_000_000_000, ttl: UInt64 = 10_000_000_000
        switch bucket % 3 {
        case 0: view.desired(e, now: now) { _ in }
        case 1: view.node(e, now: now, ttlNs: ttl) { _ in }
        default: view.lease(e, now: now) { _ in }
        }
        // Another input and this node, so that a value read has something to be placed beside.
        view.desired(KeyValueBucket.Entry(key: "inputs.cam", value: Array(#"{"input":"testsrc"}"#.utf8), revision: 2, deleted: false), now: now) { _ in }
        view.node(KeyValueBucket.Entry(key: "me", value: Array(#"{"node":"me","plugins":[],"capacity":4,"inputs":{},"version":"0","format":1}"#.utf8),
                                       revision: 3, deleted: false), now: now, ttlNs: ttl) { _ in }
        let placed = view.assignment(now: now, ttlNs: ttl, wanting: "me") { view.nodes[$0]?.entry.capacity ?? 0 }
        _ = view.isFree(key, now: now, ttlNs: ttl)
        for rule in view.rules.values { _ = (rule.rule.setCommand, rule.rule.removeCommand) }
        for input in view.inputs.keys { _ = view.inputs[input]?.value.command(input, replacing: false) }
        return placed.allSatisfy { view.inputs[$0.key] != nil && view.nodes[$0.value] != nil }
    }
}
