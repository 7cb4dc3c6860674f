import ArgumentParser

/// A length of time on the command line (--duration, --open-timeout, --metrics-interval): seconds
/// as a number (`90`, `1.5`), or with a unit as people write it (`90s`, `2m`, `1h`, `500ms`).
struct Seconds: ExpressibleByArgument, Sendable {
    let value: Double

    init(_ value: Double) { self.value = value }

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(suffix: String, factor: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        let unit = units.first { text.hasSuffix($0.suffix) && Double(text.dropLast($0.suffix.count)) != nil }
        guard let number = Double(unit.map { String(text.dropLast($0.suffix.count)) } ?? text), number.isFinite else { return nil }
        value = number * (unit?.factor ?? 1)
    }

    var defaultValueDescription: String { value == value.rounded() ? String(Int(value)) : String(value) }
}
