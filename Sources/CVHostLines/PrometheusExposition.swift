import CVHostCore
import Histogram
/// Prometheus' text exposition format (version 0.0.4), written to its specification: metric
/// families in the order they were first given, each with its HELP and TYPE lines and then all
/// its samples, label values escaped, histograms as cumulative `_bucket`s with `+Inf`, `_sum`
/// and `_count`.
///
/// Written here rather than through a client library: cvhost's counters and HdrHistograms already
/// hold every value, so a library's registry would only copy them on each scrape (and count
/// every frame twice); what a scrape needs is this format, which `promtool check metrics` checks.
public struct PrometheusExposition: Sendable {
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    private struct Family {
        let name: String
        let help: String
        let kind: Kind
        var samples: [String] = []
    }

    private var families: [Family] = []
    private var index: [String: Int] = [:]

    public init() {}

    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// A counter's value; `name` ends in `_total` (Prometheus' convention for counters).
    public mutating func counter(_ name: String, _ help: String, _ labels: [(String, String)] = [], _ value: UInt64) {
        append(name, help, .counter, sample(name, labels, String(value)))
    }

    /// A counter that is not a count (seconds of CPU time).
    public mutating func counter(_ name: String, _ help: String, _ labels: [(String, String)] = [], _ value: Double) {
        append(name, help, .counter, sample(name, labels, Self.format(value)))
    }

    public mutating func gauge(_ name: String, _ help: String, _ labels: [(String, String)] = [], _ value: Double) {
        append(name, help, .gauge, sample(name, labels, Self.format(value)))
    }

    /// A histogram: `buckets` are (upper bound, count of values at or below it), ascending; the
    /// `+Inf` bucket is `count`.
    public mutating func histogram(_ name: String, _ help: String, _ labels: [(String, String)] = [],
                                   buckets: [(le: Double, count: UInt64)], sum: Double, count: UInt64) {
        for b in buckets {
            append(name, help, .histogram, sample(name + "_bucket", labels + [("le", Self.format(b.le))], String(b.count)))
        }
        append(name, help, .histogram, sample(name + "_bucket", labels + [("le", "+Inf")], String(count)))
        append(name, help, .histogram, sample(name + "_sum", labels, Self.format(sum)))
        append(name, help, .histogram, sample(name + "_count", labels, String(count)))
    }

    /// Upper bounds of the time histograms, in seconds: 0.5 ms to 10 s.
    public static let latencyBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// An HdrHistogram of microseconds as a histogram in seconds (`latencyBuckets`).
    public mutating func histogram(_ name: String, _ help: String, _ labels: [(String, String)], microseconds h: Histogram<UInt64>) {
        let buckets = Self.latencyBuckets.map { le in (le: le, count: h.totalCount == 0 ? 0 : h.count(within: 0...UInt64(le * 1e6))) }
        histogram(name, help, labels, buckets: buckets, sum: h.mean * Double(h.totalCount) / 1e6, count: h.totalCount)
    }

    /// The exposition, ending in a newline.
    public var text: String {
        var out = ""
        for f in families {
            out += "# HELP \(f.name) \(Self.escapeHelp(f.help))\n# TYPE \(f.name) \(f.kind.rawValue)\n"
            for s in f.samples { out += s + "\n" }
        }
        return out
    }

    private mutating func append(_ name: String, _ help: String, _ kind: Kind, _ sample: String) {
        if let i = index[name] {
            precondition(families[i].kind == kind, "\(name) given as \(kind) and \(families[i].kind)")
            families[i].samples.append(sample)
        } else {
            index[name] = families.count
            families.append(Family(name: name, help: help, kind: kind, samples: [sample]))
        }
    }

    private func sample(_ name: String, _ labels: [(String, String)], _ value: String) -> String {
        guard !labels.isEmpty else { return "\(name) \(value)" }
        let l = labels.map { "\($0.0)=\"\(Self.escapeLabel($0.1))\"" }.joined(separator: ",")
        return "\(name){\(l)} \(value)"
    }

    /// Integers without a fraction; NaN and infinities as the format spells them.
    static func format(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "+Inf" : "-Inf" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }

    /// Label values: backslash, double quote and newline escaped (the exposition format's three
    /// escapes), other control characters dropped.
    static func escapeLabel(_ s: String) -> String { escape(s, quote: true) }

    /// HELP text: backslash and newline escaped, other control characters dropped.
    static func escapeHelp(_ s: String) -> String { escape(s, quote: false) }

    /// Scalar by scalar, not by Characters: a `"` or newline followed by a combining mark is one
    /// Character, which must still be escaped (else a label value ends early, and what follows
    /// is read as a metric of its own).
    private static func escape(_ s: String, quote: Bool) -> String {
        var out = String.UnicodeScalarView()
        for c in s.unicodeScalars {
            switch c {
            case "\\": out.append(contentsOf: "\\\\".unicodeScalars)
            case "\"" where quote: out.append(contentsOf: "\\\"".unicodeScalars)
            case "\n": out.append(contentsOf: "\\n".unicodeScalars)
            default: if !c.isControlCharacter && !c.isNoncharacter { out.append(c) }
            }
        }
        return String(out)
    }
}
