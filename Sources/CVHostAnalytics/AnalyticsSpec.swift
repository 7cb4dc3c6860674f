import Foundation

/// Zones, lines and tracked plugins as the command line and the config file give them:
///
///     --track PLUGIN[:high=0.4,low=0.1,min_hits=3,lost=1.5,iou=0.2,by_label=false,stationary=10]
///     --zone NAME=X,Y X,Y X,Y ...[:dwell=SECONDS,anchor=bottom_center,min_frames=2,min_distance=PIXELS,input=ID,units=auto,
///                                 distances=A,B,C,D,speed_unit=kmh]
///     --line NAME=X,Y X,Y[:in=left,anchor=bottom_center,min_frames=2,min_distance=PIXELS,input=ID,units=auto]
///     --filter LABEL[:min_score=S,min_area=A,max_area=A,min_ratio=R,max_ratio=R,input=ID]   (BoxFilter)
///     --mask NAME=X,Y X,Y X,Y ...[:anchor=bottom_center,input=ID,units=auto]                (BoxMask)
///
/// A zone or line may count only some labels: labels=person+car.
///
/// Points are pixels of the frame, or fractions of its width and height (0..1) with units=fractions,
/// or when every coordinate is within 0..1 (units=auto). A value may hold commas (distances=A,B,C,D):
/// a part without `=` goes on the value before it. Each is checked here: a one-line reason.
public enum AnalyticsSpec {
    public struct Problem: Error, CustomStringConvertible {
        public let description: String
        public init(_ d: String) { description = d }
    }

    /// A plugin whose boxes are followed, and how.
    public struct Tracked: Equatable, Sendable {
        public let plugin: String
        public let settings: TrackerSettings
    }

    public static func tracked(_ text: String) throws(Problem) -> Tracked { try tracked(fields(text, .track)) }

    public static func tracked(_ f: RuleFields) throws(Problem) -> Tracked {
        var s = TrackerSettings()
        for (k, v) in f.options {
            switch k {
            case "high": s.high = try number(f, v, k, 0...1)
            case "low": s.low = try number(f, v, k, 0...1)
            case "min_hits": s.minHits = Int(try number(f, v, k, 1...1000))
            case "lost": s.lost = try number(f, v, k, 0...3600)
            case "iou": s.matchIoU = try number(f, v, k, 0.01...1)
            case "stationary": s.stationary = try number(f, v, k, 0...31_536_000)
            case "by_label":
                switch v {
                case .bool(let b): s.byLabel = b
                case .text(let t) where t == "true" || t == "false": s.byLabel = t == "true"
                default: throw Problem("\(f.what): by_label is true or false, not '\(v.quoted)'")
                }
            default: throw Problem("\(f.what): no option '\(k)' (high, low, min_hits, lost, iou, by_label, stationary)")
            }
        }
        guard s.low <= s.high else { throw Problem("\(f.what): low (\(s.low)) must not be above high (\(s.high))") }
        return Tracked(plugin: f.name, settings: s)
    }

    public static func zone(_ text: String) throws(Problem) -> ZoneSettings { try zone(fields(text, .zone)) }

    public static func zone(_ f: RuleFields) throws(Problem) -> ZoneSettings {
        let (points, fractions) = try placed(f)
        if let why = Polygon.problem(points) { throw Problem("\(f.what): \(why)") }
        var z = ZoneSettings(name: f.name, polygon: Polygon(points))
        z.fractions = fractions
        for (k, v) in f.options {
            switch k {
            case "dwell": z.dwell = try number(f, v, k, 0...(365 * 86400))
            case "anchor": z.anchor = try anchor(f, v)
            case "min_frames": z.minFrames = Int(try number(f, v, k, 1...1000))
            case "min_distance": z.minDistance = try number(f, v, k, 0...100_000)
            case "input": z.input = try word(f, v, k)
            case "labels": z.labels = try labels(f, v)
            case "units": break
            case "distances":
                let known: [Double]? = switch v {
                case .numbers(let list): list
                case .text(let t):
                    t.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingCharacters(in: .whitespaces)) }
                        .reduce([Double]?([])) { all, n in n.flatMap { n in all.map { $0 + [n] } } }
                default: nil
                }
                guard let known, known.count == 4, known.allSatisfy({ $0 > 0 && $0 <= 1_000_000 }) else {
                    throw Problem("\(f.what): distances are the real lengths of its four sides, from each point to the next (metres, feet "
                                  + "with speed_unit=mph), four numbers above 0: distances=A,B,C,D, not '\(v.quoted)'")
                }
                z.distances = known
            case "speed_unit":
                let unit = try word(f, v, k)
                guard let unit = GroundPlane.SpeedUnit(rawValue: unit) ?? ["kmh": .kmh, "mps": .mps][unit] else {
                    throw Problem("\(f.what): speed_unit is kmh (distances in metres), mph (in feet) or mps (metres), not '\(unit)'")
                }
                z.speedUnit = unit
            default:
                throw Problem("\(f.what): no option '\(k)' (dwell, anchor, min_frames, min_distance, input, labels, units, distances, speed_unit)")
            }
        }
        if let sides = z.distances {
            guard points.count == 4 else {
                throw Problem("\(f.what): distances measure a zone of four points (a stretch of ground seen in perspective), not \(points.count)")
            }
            guard GroundPlane(corners: points, sides: sides) != nil else {
                throw Problem("\(f.what): its four points and distances make no view of flat ground: give its points in order around it")
            }
        } else if f.value("speed_unit") != nil {
            throw Problem("\(f.what): speed_unit says what distances= are in: give distances=A,B,C,D too")
        }
        return z
    }

    public static func line(_ text: String) throws(Problem) -> LineSettings { try line(fields(text, .line)) }

    public static func line(_ f: RuleFields) throws(Problem) -> LineSettings {
        let (points, fractions) = try placed(f)
        guard points.count == 2 else {
            throw Problem("\(f.what): a line is two points (X,Y X,Y), not \(points.count)")
        }
        let segment = Segment(points[0], points[1])
        guard segment.length > 0 else { throw Problem("\(f.what): its two points are the same: a line needs length") }
        var l = LineSettings(name: f.name, segment: segment)
        l.fractions = fractions
        for (k, v) in f.options {
            switch k {
            case "in":
                guard let side = LineSettings.Side(rawValue: try word(f, v, k)) else {
                    throw Problem("\(f.what): in is left or right (of the line facing from its first point to its second), not '\(v.quoted)'")
                }
                l.inSide = side
            case "anchor": l.anchor = try anchor(f, v)
            case "min_frames": l.minFrames = Int(try number(f, v, k, 1...1000))
            case "min_distance": l.minDistance = try number(f, v, k, 0...100_000)
            case "input": l.input = try word(f, v, k)
            case "labels": l.labels = try labels(f, v)
            case "units": break
            default: throw Problem("\(f.what): no option '\(k)' (in, anchor, min_frames, min_distance, input, labels, units)")
            }
        }
        return l
    }

    public static func filter(_ text: String) throws(Problem) -> BoxFilter { try filter(fields(text, .filter)) }

    public static func filter(_ f: RuleFields) throws(Problem) -> BoxFilter {
        var b = BoxFilter(label: f.name)
        for (k, v) in f.options {
            switch k {
            case "min_score": b.minScore = try number(f, v, k, 0...1)
            case "min_area": b.minArea = try number(f, v, k, 0...1e12)
            case "max_area": b.maxArea = try number(f, v, k, 0...1e12)
            case "min_ratio": b.minRatio = try number(f, v, k, 0...1000)
            case "max_ratio": b.maxRatio = try number(f, v, k, 0...1000)
            case "input": b.input = try word(f, v, k)
            default: throw Problem("\(f.what): no option '\(k)' (min_score, min_area, max_area, min_ratio, max_ratio, input)")
            }
        }
        guard [b.minScore, b.minArea, b.maxArea, b.minRatio, b.maxRatio].contains(where: { $0 != nil }) else {
            throw Problem("\(f.what): give what it refuses: min_score, min_area, max_area, min_ratio or max_ratio")
        }
        // Areas of at most 1 are shares of the frame: compared only in the same units.
        if let lo = b.minArea, let hi = b.maxArea, (lo <= 1) == (hi <= 1), lo > hi {
            throw Problem("\(f.what): min_area (\(Point.text(lo))) is above max_area (\(Point.text(hi))): no box would be followed")
        }
        if let lo = b.minRatio, let hi = b.maxRatio, lo > hi {
            throw Problem("\(f.what): min_ratio (\(Point.text(lo))) is above max_ratio (\(Point.text(hi))): no box would be followed")
        }
        return b
    }

    public static func mask(_ text: String) throws(Problem) -> BoxMask { try mask(fields(text, .mask)) }

    public static func mask(_ f: RuleFields) throws(Problem) -> BoxMask {
        let (points, fractions) = try placed(f)
        if let why = Polygon.problem(points) { throw Problem("\(f.what): \(why)") }
        var m = BoxMask(name: f.name, polygon: Polygon(points))
        m.fractions = fractions
        for (k, v) in f.options {
            switch k {
            case "anchor": m.anchor = try anchor(f, v)
            case "input": m.input = try word(f, v, k)
            case "units": break
            default: throw Problem("\(f.what): no option '\(k)' (anchor, input, units)")
            }
        }
        return m
    }

    // MARK: - Parts

    /// A rule's text as its flag takes it, read into its fields (not yet checked): NAME=POINTS[:OPTIONS]
    /// for a zone, line or mask; PLUGIN[:OPTIONS] for a track, LABEL[:OPTIONS] for a filter.
    static func fields(_ text: String, _ kind: RuleKind) throws(Problem) -> RuleFields {
        switch kind {
        case .zone, .line, .mask: return try named(text, kind)
        case .track:
            let (plugin, options) = split(text, at: ":")
            guard !plugin.isEmpty else { throw Problem("--track \(text): name the plugin whose boxes are followed (--track detect)") }
            return RuleFields(.track, name: plugin, points: nil, options: try pairs(options, "--track \(text)").map { ($0, .text($1)) },
                              what: "--track \(text)", given: text)
        case .filter:
            let (label, options) = split(text, at: ":")
            guard !label.isEmpty else { throw Problem("--filter \(text): name the label it is for, or * for every label (--filter person:min_area=2000)") }
            let given = try pairs(options, "--filter \(text)")
            guard !given.isEmpty else { throw Problem("--filter \(text): give what it refuses: min_score, min_area, max_area, min_ratio or max_ratio") }
            return RuleFields(.filter, name: label, points: nil, options: given.map { ($0, .text($1)) }, what: "--filter \(label)", given: text)
        }
    }

    /// labels=person+car (or, in JSON, ["person","car"]): the labels a zone or line counts.
    private static func labels(_ f: RuleFields, _ v: RuleFields.Value) throws(Problem) -> Set<String> {
        let names: [String] = switch v {
        case .text(let t): t.split(separator: "+", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        case .strings(let list): list
        default: []
        }
        guard !names.isEmpty, names.allSatisfy({ !$0.isEmpty }) else {
            throw Problem("\(f.what): labels are names joined by + (labels=person+car; in JSON [\"person\",\"car\"]), not '\(v.quoted)'")
        }
        return Set(names)
    }

    private static func split(_ s: String, at c: Character) -> (String, String) {
        guard let i = s.firstIndex(of: c) else { return (s, "") }
        return (String(s[..<i]), String(s[s.index(after: i)...]))
    }

    private static func pairs(_ options: String, _ what: String) throws(Problem) -> [(String, String)] {
        var out: [(String, String)] = []
        for part in options.split(separator: ",", omittingEmptySubsequences: true) {
            // A part with no `=` goes on the value before it (distances=3.5,20,3.5,20).
            if !part.contains("="), let last = out.popLast() {
                out.append((last.0, last.1 + "," + part.trimmingCharacters(in: .whitespaces)))
                continue
            }
            let (k, v) = split(String(part), at: "=")
            guard !k.isEmpty, !v.isEmpty else { throw Problem("\(what): '\(part)' is not key=value") }
            out.append((k.trimmingCharacters(in: .whitespaces), v.trimmingCharacters(in: .whitespaces)))
        }
        return out
    }

    private static func number(_ f: RuleFields, _ v: RuleFields.Value, _ k: String, _ range: ClosedRange<Double>) throws(Problem) -> Double {
        let n: Double? = switch v {
        case .number(let n): n
        case .text(let t): Double(t)
        default: nil
        }
        guard let n, n.isFinite, range.contains(n) else {
            throw Problem("\(f.given): \(k) is a number from \(Point.text(range.lowerBound)) to \(Point.text(range.upperBound)), not '\(v.quoted)'")
        }
        return n
    }

    /// A name or a word (an input, an anchor, a unit): text without , : = or spaces.
    private static func word(_ f: RuleFields, _ v: RuleFields.Value, _ k: String) throws(Problem) -> String {
        guard case .text(let t) = v, !t.isEmpty, !t.contains(where: { ",:= ".contains($0) }) else {
            throw Problem("\(f.what): \(k) is a word (without , : = or spaces), not '\(v.quoted)'")
        }
        return t
    }

    private static func anchor(_ f: RuleFields, _ v: RuleFields.Value) throws(Problem) -> Anchor {
        guard case .text(let t) = v, let a = Anchor(rawValue: t) else {
            throw Problem("\(f.given): anchor is one of \(Anchor.allCases.map(\.rawValue).joined(separator: ", ")), not '\(v.quoted)'")
        }
        return a
    }

    /// NAME=POINTS[:OPTIONS] read: its name, points and options, not yet checked.
    private static func named(_ text: String, _ kind: RuleKind) throws(Problem) -> RuleFields {
        let flag = "--\(kind.rawValue)"
        let (name, rest) = split(text, at: "=")
        guard !name.isEmpty, !rest.isEmpty, isName(name) else {
            throw Problem("\(flag) \(text): write NAME=X,Y X,Y ... (a name of a-z, 0-9, _ and -, then its points)")
        }
        let (pointText, optionText) = split(rest, at: ":")
        let options = try pairs(optionText, "\(flag) \(name)")
        var points: [Point] = []
        for item in pointText.split(whereSeparator: { $0 == " " || $0 == ";" }) {
            let xy = item.split(separator: ",")
            guard xy.count == 2, let x = Double(xy[0]), let y = Double(xy[1]), x.isFinite, y.isFinite else {
                throw Problem("\(flag) \(name): '\(item)' is not a point X,Y")
            }
            points.append(Point(x, y))
        }
        return RuleFields(kind, name: name, points: points, options: options.map { ($0, .text($1)) }, what: "\(flag) \(name)", given: text)
    }

    /// A zone's, line's or mask's name: a-z, 0-9, _ and -.
    static func isName(_ name: String) -> Bool {
        !name.isEmpty && name.unicodeScalars.allSatisfy { ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "_" || $0 == "-" }
    }

    /// The points, and whether they are fractions of the frame (units=fractions, or auto with
    /// every coordinate within 0..1) or pixels.
    private static func placed(_ f: RuleFields) throws(Problem) -> (points: [Point], fractions: Bool) {
        let points = f.points ?? []
        let units = try f.value("units").map { v throws(Problem) in try word(f, v, "units") } ?? "auto"
        let within = points.allSatisfy { (0...1).contains($0.x) && (0...1).contains($0.y) }
        let fractions: Bool
        switch units {
        case "auto": fractions = within
        case "fractions":
            guard within else { throw Problem("\(f.what): with units=fractions every point is 0..1 of the frame; \(points.first { !((0...1).contains($0.x) && (0...1).contains($0.y)) }!) is outside it") }
            fractions = true
        case "pixels":
            guard points.allSatisfy({ $0.x >= 0 && $0.y >= 0 }) else { throw Problem("\(f.what): a point in pixels is not negative") }
            fractions = false
        default: throw Problem("\(f.what): units is auto, pixels or fractions, not '\(units)'")
        }
        if !fractions, let negative = points.first(where: { $0.x < 0 || $0.y < 0 }) {
            throw Problem("\(f.what): \(negative) is outside the frame (pixels are not negative)")
        }
        return (points, fractions)
    }
}
