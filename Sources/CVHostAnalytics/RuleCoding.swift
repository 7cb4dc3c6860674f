/// Zones, lines, masks, filters and tracks in their one JSON shape: what GET /analytics,
/// `analytics.changed`, `session.started` (and the live view that draws from it), the state file
/// and an HTTP body (PUT /zones/NAME) have; decoding checks what the command line's text is
/// checked by (AnalyticsSpec), with the same reasons. The text form is the command line's only.
///
///     zone   {"name":"bay", "points":[[x,y],[x,y],[x,y],...], "units":"pixels", "anchor":"bottom_center", "min_frames":2,
///             "min_distance":N, "dwell":S, "input":"ID", "distances":[a,b,c,d], "speed_unit":"kmh", "labels":["car"]}
///     line   {"name":"gate", "points":[[x,y],[x,y]], "units", "in":"left", "anchor", "min_frames", "min_distance", "input", "labels"}
///     mask   {"name":"tree", "points":[[x,y],[x,y],[x,y],...], "units", "anchor", "input"}
///     filter {"label":"person", "min_score":0.5, "min_area":A, "max_area":A, "min_ratio":R, "max_ratio":R, "input"}
///     track  {"plugin":"detect", "high":0.4, "low":0.1, "min_hits":3, "lost":1.5, "iou":0.2, "by_label":false, "stationary":10}
///
/// Optional fields are left out when not set; a track's `high` when it follows the plugin's own
/// threshold (TrackerSettings.highGiven). `labels` may also be given as one string, "person+car".
struct RuleKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ s: String) { stringValue = s }
    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { nil }
}

extension RuleFields {
    /// The fields of a JSON object of `kind`'s shape.
    init(_ kind: RuleKind, from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: RuleKey.self)
        guard let name = try c.decodeIfPresent(String.self, forKey: RuleKey(kind.key)), !name.isEmpty else {
            throw AnalyticsSpec.Problem("a \(kind.rawValue) needs \"\(kind.key)\"")
        }
        var points: [Point]?
        var options: [(key: String, value: Value)] = []
        for key in c.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) where key.stringValue != kind.key {
            if try c.decodeNil(forKey: key) { continue }
            if key.stringValue == "points" {
                guard let list = try? c.decode([[Double]].self, forKey: key), list.allSatisfy({ $0.count == 2 }) else {
                    throw AnalyticsSpec.Problem("\(kind.rawValue) \(name): \"points\" are [[x,y],[x,y],...] in the frame's pixels (or fractions of it)")
                }
                points = list.map { Point($0[0], $0[1]) }
            } else if let b = try? c.decode(Bool.self, forKey: key) {
                options.append((key.stringValue, .bool(b)))
            } else if let n = try? c.decode(Double.self, forKey: key) {
                options.append((key.stringValue, .number(n)))
            } else if let s = try? c.decode(String.self, forKey: key) {
                options.append((key.stringValue, .text(s)))
            } else if let list = try? c.decode([Double].self, forKey: key) {
                options.append((key.stringValue, .numbers(list)))
            } else if let list = try? c.decode([String].self, forKey: key) {
                options.append((key.stringValue, .strings(list)))
            } else {
                throw AnalyticsSpec.Problem("\(kind.rawValue) \(name): \"\(key.stringValue)\" is a number, true/false, a word or a list of them")
            }
        }
        try self.init(kind, name: name, points: points, options: options)
    }
}

extension AnalyticsRule {
    public init(text: String) throws(AnalyticsSpec.Problem) { try self.init(fields: AnalyticsSpec.fields(text, Self.kind)) }
    public init(from decoder: Decoder) throws { try self.init(fields: RuleFields(Self.kind, from: decoder)) }
}

/// Writes the one shape's fields in its order.
private struct RuleWriter {
    var c: KeyedEncodingContainer<RuleKey>

    mutating func set<T: Encodable>(_ key: String, _ value: T?) throws {
        if let value { try c.encode(value, forKey: RuleKey(key)) }
    }

    mutating func points(_ ps: [Point], fractions: Bool) throws {
        try set("points", ps.map { [$0.x, $0.y] })
        try set("units", fractions ? "fractions" : "pixels")
    }
}

extension ZoneSettings: AnalyticsRule {
    public static var kind: RuleKind { .zone }
    public var ruleName: String { name }
    public var ruleInput: String? { input }
    public init(fields: RuleFields) throws(AnalyticsSpec.Problem) { self = try AnalyticsSpec.zone(fields) }

    public func encode(to encoder: Encoder) throws {
        var w = RuleWriter(c: encoder.container(keyedBy: RuleKey.self))
        try w.set("name", name)
        try w.points(polygon.points, fractions: fractions)
        try w.set("anchor", anchor.rawValue)
        try w.set("min_frames", minFrames)
        try w.set("min_distance", minDistance)
        try w.set("dwell", dwell)
        try w.set("input", input)
        try w.set("distances", distances)
        try w.set("speed_unit", distances == nil ? nil : speedUnit.rawValue)
        try w.set("labels", labels?.sorted())
    }
}

extension LineSettings: AnalyticsRule {
    public static var kind: RuleKind { .line }
    public var ruleName: String { name }
    public var ruleInput: String? { input }
    public init(fields: RuleFields) throws(AnalyticsSpec.Problem) { self = try AnalyticsSpec.line(fields) }

    public func encode(to encoder: Encoder) throws {
        var w = RuleWriter(c: encoder.container(keyedBy: RuleKey.self))
        try w.set("name", name)
        try w.points([segment.a, segment.b], fractions: fractions)
        try w.set("in", inSide.rawValue)
        try w.set("anchor", anchor.rawValue)
        try w.set("min_frames", minFrames)
        try w.set("min_distance", minDistance)
        try w.set("input", input)
        try w.set("labels", labels?.sorted())
    }
}

extension BoxMask: AnalyticsRule {
    public static var kind: RuleKind { .mask }
    public var ruleName: String { name }
    public var ruleInput: String? { input }
    public init(fields: RuleFields) throws(AnalyticsSpec.Problem) { self = try AnalyticsSpec.mask(fields) }

    public func encode(to encoder: Encoder) throws {
        var w = RuleWriter(c: encoder.container(keyedBy: RuleKey.self))
        try w.set("name", name)
        try w.points(polygon.points, fractions: fractions)
        try w.set("anchor", anchor.rawValue)
        try w.set("input", input)
    }
}

extension BoxFilter: AnalyticsRule {
    public static var kind: RuleKind { .filter }
    public var ruleName: String { label }
    public var ruleInput: String? { input }
    public init(fields: RuleFields) throws(AnalyticsSpec.Problem) { self = try AnalyticsSpec.filter(fields) }

    public func encode(to encoder: Encoder) throws {
        var w = RuleWriter(c: encoder.container(keyedBy: RuleKey.self))
        try w.set("label", label)
        try w.set("min_score", minScore)
        try w.set("min_area", minArea)
        try w.set("max_area", maxArea)
        try w.set("min_ratio", minRatio)
        try w.set("max_ratio", maxRatio)
        try w.set("input", input)
    }
}

extension AnalyticsSpec.Tracked: AnalyticsRule {
    public static var kind: RuleKind { .track }
    public var ruleName: String { plugin }
    public var ruleInput: String? { nil }
    public init(fields: RuleFields) throws(AnalyticsSpec.Problem) { self = try AnalyticsSpec.tracked(fields) }

    public func encode(to encoder: Encoder) throws {
        var w = RuleWriter(c: encoder.container(keyedBy: RuleKey.self))
        try w.set("plugin", plugin)
        try w.set("high", settings.highGiven ? settings.high : nil)
        try w.set("low", settings.low)
        try w.set("min_hits", settings.minHits)
        try w.set("lost", settings.lost)
        try w.set("iou", settings.matchIoU)
        try w.set("by_label", settings.byLabel)
        try w.set("stationary", settings.stationary)
    }
}
