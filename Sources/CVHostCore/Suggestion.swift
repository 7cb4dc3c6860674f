/// "Did you mean ...?": the known name nearest a mistyped one, when it is near enough to be
/// what was meant (an edit or two away, such as an s added or dropped).
public enum Suggestion {
    public static func closest(to word: String, in candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(word.lowercased(), $0.lowercased())) }
        // Ties go to the first name in order, whatever order the candidates come in.
        guard let best = scored.min(by: { ($0.1, $0.0) < ($1.1, $1.0) }), best.1 <= max(1, min(2, word.count / 3)) else { return nil }
        return best.0
    }

    /// Edit distance: insertions, deletions, substitutions, and two neighbours swapped (the
    /// commonest typo: --inptu for --input), each one edit (optimal string alignment).
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var before = [Int](), previous = Array(0...b.count)
        for i in a.indices {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for j in b.indices {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (a[i] == b[j] ? 0 : 1))
                if i > 0, j > 0, a[i] == b[j - 1], a[i - 1] == b[j] { current[j + 1] = min(current[j + 1], before[j - 1] + 1) }
            }
            before = previous
            previous = current
        }
        return previous[b.count]
    }
}
