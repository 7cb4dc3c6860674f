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
}
