import Foundation

/// Builds one JSON object as UTF-8 bytes, field by field, with keys in the order written.
/// Faster than JSONEncoder for the small, fixed-shape objects of the output stream and
/// always single-line.
public struct JSONObject: Sendable {
    public internal(set) var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var empty = true
    /// Event, source and plugin of an event's envelope (`envelope(...)`): where the line goes.
    public internal(set) var route: OutputLine.Route?
    /// The envelope's `seq`.
    public internal(set) var sequence: UInt64?
    /// The envelope's `event_id`.
    public internal(set) var eventID: String?
    /// The envelope's `pts`, in ns (the frame's media time): a clip of the event starts before it.
    public internal(set) var ptsNs: Int64?
    /// The track the line is about, when it is about one (an analytics event's `track_id`), and its label.
    public var track: Int?
    public var label: String?

    public init() {}

    /// A value's own JSON object (its `Encodable` shape, keys sorted), to which fields can still be
    /// added: the one shape of a zone or a line, in an output line.
    public init<T: Encodable>(encoding value: T) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        bytes = Array(data.dropLast())
        empty = bytes.count <= 1
    }

    private mutating func key(_ name: String) {
        if !empty { bytes.append(UInt8(ascii: ",")) }
        empty = false
        JSONObject.appendString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func set(_ name: String, _ value: String?) {
        key(name)
        if let value { JSONObject.appendString(value, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
    }

    public mutating func set<I: BinaryInteger>(_ name: String, _ value: I?) {
        key(name)
        bytes.append(contentsOf: (value.map { String($0) } ?? "null").utf8)
    }

    /// A number rounded to `decimals` places; NaN and infinities become null.
    public mutating func set(_ name: String, _ value: Double?, decimals: Int = 3) {
        key(name)
        guard let value, value.isFinite else { return bytes.append(contentsOf: "null".utf8) }
        bytes.append(contentsOf: JSONObject.number(value, decimals: decimals).utf8)
    }

    public mutating func set(_ name: String, _ value: Bool?) {
        key(name)
        bytes.append(contentsOf: (value.map { $0 ? "true" : "false" } ?? "null").utf8)
    }

    /// Seconds since the epoch with microseconds, from nanoseconds: `1763706543.123456`.
    public mutating func setSeconds(_ name: String, nanoseconds ns: Int64?) {
        key(name)
        guard let ns else { return bytes.append(contentsOf: "null".utf8) }
        let sign = ns < 0 ? "-" : ""
        // Rounded to the nearest microsecond: 66_666_667 ns is 0.066667, not 0.066666.
        let totalMicros = (ns.magnitude + 500) / 1000
        let micros = String(totalMicros % 1_000_000)
        bytes.append(contentsOf: "\(sign)\(totalMicros / 1_000_000).\(String(repeating: "0", count: 6 - micros.count))\(micros)".utf8)
    }

    public mutating func set(_ name: String, object: JSONObject) {
        key(name)
        bytes.append(contentsOf: object.finished())
    }

    public mutating func set(_ name: String, array: [JSONObject]) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (i, o) in array.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: o.finished())
        }
        bytes.append(UInt8(ascii: "]"))
    }

    public mutating func set(_ name: String, strings: [String]) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (i, s) in strings.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONObject.appendString(s, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Finite numbers (a non-finite one is null), each with at most `decimals` decimals.
    public mutating func set(_ name: String, numbers: [Double], decimals: Int = 3) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (i, n) in numbers.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: (n.isFinite ? JSONObject.number(n, decimals: decimals) : "null").utf8)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Lists of finite numbers, as `numbers` writes one: points as [[x, y], ...].
    public mutating func set(_ name: String, numberLists: [[Double]], decimals: Int = 3) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (i, list) in numberLists.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "["))
            for (k, n) in list.enumerated() {
                if k > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes.append(contentsOf: (n.isFinite ? JSONObject.number(n, decimals: decimals) : "null").utf8)
            }
            bytes.append(UInt8(ascii: "]"))
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Inserts bytes that are already one valid, minified JSON value (from `JSONValidator`).
    public mutating func set(_ name: String, validatedJSON: [UInt8]) {
        key(name)
        bytes.append(contentsOf: validatedJSON)
    }

    public func finished() -> [UInt8] { bytes + [UInt8(ascii: "}")] }

    public var text: String { String(decoding: finished(), as: UTF8.self) }

    public static func number(_ value: Double, decimals: Int) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        if rounded == rounded.rounded(), abs(rounded) < 1e15 { return String(Int64(rounded)) }
        return "\(rounded)"
    }

    static func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        hex[Int(b >> 4)], hex[Int(b & 0xF)]])
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
