/// The labels a line or a zone keeps counts for: the first `maxLabels` it sees, then `_other` for
/// every label after them. A plugin may report a new label on every frame (a text it read, an id
/// it made up): counts kept per label without a bound would grow the process and every /metrics
/// scrape without end. The first labels keep their own counts for the whole run, so each count
/// (and each Prometheus counter made from it) only ever grows.
enum CountedLabel {
    static let maxLabels = 64
    static let other = "_other"

    /// The key `label` is counted under in `counts`.
    static func key<V>(_ label: String, in counts: [String: V]) -> String {
        counts[label] != nil || counts.count < maxLabels ? label : other
    }

    /// `counts` (kept from an earlier run, which may have been edited) within the bound: the first
    /// `maxLabels` labels by name keep their own, the rest are added into `_other`.
    static func bounded<V>(_ counts: [String: V], adding add: (V, V) -> V) -> [String: V] {
        guard counts.count > maxLabels else { return counts }
        var out: [String: V] = [:]
        for label in counts.keys.filter({ $0 != other }).sorted().prefix(maxLabels) { out[label] = counts[label] }
        for (label, value) in counts where out[label] == nil { out[other] = out[other].map { add($0, value) } ?? value }
        return out
    }
}
