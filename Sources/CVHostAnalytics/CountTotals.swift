import CVHostCore

/// What one plugin's lines and zones on one input have counted, per label: each line's crossings
/// in and out, each zone's entries. Kept between runs (`--state`), so that a site's totals go on
/// after a restart; each with the shape it was counted on, so that a line moved since (or turned
/// round) starts anew, as it does while running (`LineSettings.hasShape`).
///
///     {"lines": {"door": {"points": [[640,100],[640,600]], "units": "pixels", "in": "left",
///                         "labels": {"person": {"in": 12, "out": 9}}}},
///      "zones": {"bay": {"points": [[800,300],[1100,300],[1100,650]], "units": "pixels",
///                        "labels": {"car": {"entered": 4}}}}}
public struct CountTotals: Codable, Equatable, Sendable {
    public struct Line: Codable, Equatable, Sendable {
        public var points: [[Double]]
        public var units: String
        public var `in`: String
        public var labels: [String: Crossings]

        public init(_ settings: LineSettings, labels: [String: Crossings]) {
            points = [settings.segment.a, settings.segment.b].map { [$0.x, $0.y] }
            units = settings.fractions ? "fractions" : "pixels"
            self.in = settings.inSide.rawValue
            self.labels = labels
        }

        /// Whether these counts were made on `settings`' shape.
        public func counts(_ settings: LineSettings) -> Bool {
            let now = Line(settings, labels: [:])
            return points == now.points && units == now.units && self.in == now.in
        }
    }

    public struct Crossings: Codable, Equatable, Sendable {
        public var `in`: Int
        public var out: Int

        public init(in inward: Int, out: Int) {
            self.in = inward
            self.out = out
        }

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.in = try c.decodeIfPresent(Int.self, forKey: .in) ?? 0
            out = try c.decodeIfPresent(Int.self, forKey: .out) ?? 0
        }
    }

    public struct Zone: Codable, Equatable, Sendable {
        public var points: [[Double]]
        public var units: String
        public var labels: [String: Entries]

        public init(_ settings: ZoneSettings, labels: [String: Entries]) {
            points = settings.polygon.points.map { [$0.x, $0.y] }
            units = settings.fractions ? "fractions" : "pixels"
            self.labels = labels
        }

        public func counts(_ settings: ZoneSettings) -> Bool {
            let now = Zone(settings, labels: [:])
            return points == now.points && units == now.units
        }
    }

    public struct Entries: Codable, Equatable, Sendable {
        public var entered: Int

        public init(entered: Int) {
            self.entered = entered
        }
    }

    public var lines: [String: Line] = [:]
    public var zones: [String: Zone] = [:]

    public init() {}

    /// A file may leave out what it has none of (`lines`, `zones`, a label's `out`).
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        lines = try c.decodeIfPresent([String: Line].self, forKey: .lines) ?? [:]
        zones = try c.decodeIfPresent([String: Zone].self, forKey: .zones) ?? [:]
    }

    public var isEmpty: Bool { lines.isEmpty && zones.isEmpty }

    /// The counts of line `settings` kept here, per label, when they were made on its shape (within
    /// `CountedLabel`'s bound: a file may have been edited).
    func crossings(_ settings: LineSettings) -> [String: (in: Int, out: Int)] {
        guard let kept = lines[settings.name], kept.counts(settings) else { return [:] }
        return CountedLabel.bounded(kept.labels.mapValues { (in: max(0, $0.in), out: max(0, $0.out)) }) {
            ($0.in.addingClamped($1.in), $0.out.addingClamped($1.out))
        }
    }

    /// The entries of zone `settings` kept here, per label, when they were made on its shape.
    func entries(_ settings: ZoneSettings) -> [String: Int] {
        guard let kept = zones[settings.name], kept.counts(settings) else { return [:] }
        return CountedLabel.bounded(kept.labels.mapValues { max(0, $0.entered) }) { $0.addingClamped($1) }
    }
}
