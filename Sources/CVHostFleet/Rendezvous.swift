/// Which node an input belongs on (rendezvous, or highest-random-weight, hashing): every node
/// scores every input by a hash of the two names and the highest scorer takes it. Every node
/// computes the same order from the names alone, and a node's coming or going moves only the
/// inputs it scores highest on: its share, no more.
enum Rendezvous {
    /// The nodes, best first for `input`.
    static func order(_ nodes: [String], for input: String) -> [String] {
        nodes.map { ($0, score($0, input)) }.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }.map(\.0)
    }

    /// FNV-1a over node, a 0 byte and input, finished with SplitMix64's mixer (FNV alone spreads
    /// names that differ in their last letter poorly). Not Swift's Hasher: it is seeded per process.
    static func score(_ node: String, _ input: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in node.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        h = (h ^ 0) &* 0x100_0000_01b3
        for b in input.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        h = (h ^ (h >> 30)) &* 0xbf58_476d_1ce4_e5b9
        h = (h ^ (h >> 27)) &* 0x94d0_49bb_1331_11eb
        return h ^ (h >> 31)
    }
}
