import Foundation

/// Zones, lines and tracked plugins as the command line and the config file give them:
///
///     --track PLUGIN[:high=0.4,low=0.1,min_hits=3,lost=1.5,iou=0.2,by_label=false]
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
        init(_ d: String) { description = d }
    }

    /// A plugin whose boxes are followed, and how.
    public struct Tracked: Equatable, Sendable {
        public let plugin: String
        public let settings: TrackerSettings
    }

    public static func tracked(_ text: String) throws(Problem) -> Tracked {
        let (plugin, options) = split(text, at: ":")
        guard !plugin.isEmpty else { throw Problem("--track \(text): name the plugin whose boxes are followed (--track detect)") }
        var s = TrackerSettings()
        for (k, v) in try pairs(options, "--track \(text)") {
            switch k {
            case "high": s.high = try number(v, k, text, 0...1)
            case "low": s.low = try number(v, k, text, 0...1)
            case "min_hits": s.minHits = Int(try number(v, k, text, 1...1000))
            case "lost": s.lost = try number(v, k, text, 0...3600)
            case "iou": s.matchIoU = try number(v, k, text, 0.01...1)
            case "by_label":
                guard v == "true" || v == "false" else { throw Problem("--track \(text): by_label is true or false, not '\(v)'") }
                s.byLabel = v == "true"
            default: throw Problem("--track \(text): no option '\(k)' (high, low, min_hits, lost, iou, by_label)")
            }
        }
        guard s.low <= s.high else { throw Problem("--track \(text): low (\(s.low)) must not be above high (\(s.high))") }
        return Tracked(plugin: plugin, settings: s)
    }

    public static func zone(_ text: String) throws(Problem) -> ZoneSettings {
        let (name, points, options) = try named(text, "--zone")
        if let why = Polygon.problem(points.points) { throw Problem("--zone \(name): \(why)") }
        var z = ZoneSettings(name: name, polygon: Polygon(points.points))
        z.fractions = points.fractions
        for (k, v) in options {
            switch k {
            case "dwell": z.dwell = try number(v, k, text, 0...(365 * 86400))
            case "anchor": z.anchor = try anchor(v, text)
            case "min_frames": z.minFrames = Int(try number(v, k, text, 1...1000))
            case "min_distance": z.minDistance = try number(v, k, text, 0...100_000)
            case "input": z.input = v
            case "labels": z.labels = try labels(v, "--zone \(name)")
            case "units": break
            case "distances":
                let parts = v.split(separator: ",", omittingEmptySubsequences: false)
                let known = parts.compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
                guard parts.count == 4, known.count == 4, known.allSatisfy({ $0 > 0 && $0 <= 1_000_000 }) else {
                    throw Problem("--zone \(name): distances are the real lengths of its four sides, from each point to the next (metres, feet "
                                  + "with speed_unit=mph), four numbers above 0: distances=A,B,C,D, not '\(v)'")
                }
                z.distances = known
            case "speed_unit":
                guard let unit = GroundPlane.SpeedUnit(rawValue: v) ?? ["kmh": .kmh, "mps": .mps][v] else {
                    throw Problem("--zone \(name): speed_unit is kmh (distances in metres), mph (in feet) or mps (metres), not '\(v)'")
                }
                z.speedUnit = unit
            default:
                throw Problem("--zone \(name): no option '\(k)' (dwell, anchor, min_frames, min_distance, input, labels, units, distances, speed_unit)")
            }
        }
        if let sides = z.distances {
            guard points.points.count == 4 else {
                throw Problem("--zone \(name): distances measure a zone of four points (a stretch of ground seen in perspective), not \(points.points.count)")
            }
            guard GroundPlane(corners: points.points, sides: sides) != nil else {
                throw Problem("--zone \(name): its four points and distances make no view of flat ground: give its points in order around it")
            }
        } else if options.contains(where: { $0.0 == "speed_unit" }) {
            throw Problem("--zone \(name): speed_unit says what distances= are in: give distances=A,B,C,D too")
        }
        return z
    }

    public static func line(_ text: String) throws(Problem) -> LineSettings {
        let (name, points, options) = try named(text, "--line")
        guard points.points.count == 2 else {
            throw Problem("--line \(name): a line is two points (X,Y X,Y), not \(points.points.count)")
        }
        let segment = Segment(points.points[0], points.points[1])
        guard segment.length > 0 else { throw Problem("--line \(name): its two points are the same: a line needs length") }
        var l = LineSettings(name: name, segment: segment)
        l.fractions = points.fractions
        for (k, v) in options {
            switch k {
            case "in":
                guard let side = LineSettings.Side(rawValue: v) else {
                    throw Problem("--line \(name): in is left or right (of the line facing from its first point to its second), not '\(v)'")
                }
                l.inSide = side
            case "anchor": l.anchor = try anchor(v, text)
            case "min_frames": l.minFrames = Int(try number(v, k, text, 1...1000))
            case "min_distance": l.minDistance = try number(v, k, text, 0...100_000)
            case "input": l.input = v
            case "labels": l.labels = try labels(v, "--line \(name)")
            case "units": break
            default: throw Problem("--line \(name): no option '\(k)' (in, anchor, min_frames, min_distance, input, labels, units)")
            }
        }
        return l
    }

    public static func filter(_ text: String) throws(Problem) -> BoxFilter {
        let (label, options) = split(text, at: ":")
        guard !label.isEmpty else { throw Problem("--filter \(text): name the label it is for, or * for every label (--filter person:min_area=2000)") }
        var f = BoxFilter(label: label)
        let given = try pairs(options, "--filter \(text)")
        guard !given.isEmpty else { throw Problem("--filter \(text): give what it refuses: min_score, min_area, max_area, min_ratio or max_ratio") }
        for (k, v) in given {
            switch k {
            case "min_score": f.minScore = try number(v, k, text, 0...1)
            case "min_area": f.minArea = try number(v, k, text, 0...1e12)
            case "max_area": f.maxArea = try number(v, k, text, 0...1e12)
            case "min_ratio": f.minRatio = try number(v, k, text, 0...1000)
            case "max_ratio": f.maxRatio = try number(v, k, text, 0...1000)
            case "input": f.input = v
            default: throw Problem("--filter \(label): no option '\(k)' (min_score, min_area, max_area, min_ratio, max_ratio, input)")
            }
        }
        // Areas of at most 1 are shares of the frame: compared only in the same units.
        if let lo = f.minArea, let hi = f.maxArea, (lo <= 1) == (hi <= 1), lo > hi {
            throw Problem("--filter \(label): min_area (\(Point.text(lo))) is above max_area (\(Point.text(hi))): no box would be followed")
        }
        if let lo = f.minRatio, let hi = f.maxRatio, lo > hi {
            throw Problem("--filter \(label): min_ratio (\(Point.text(lo))) is above max_ratio (\(Point.text(hi))): no box would be followed")
        }
        return f
    }

    public static func mask(_ text: String) throws(Problem) -> BoxMask {
        let (name, points, options) = try named(text, "--mask")
        if let why = Polygon.problem(points.points) { throw Problem("--mask \(name): \(why)") }
        var m = BoxMask(name: name, polygon: Polygon(points.points))
        m.fractions = points.fractions
        for (k, v) in options {
            switch k {
            case "anchor": m.anchor = try anchor(v, text)
            case "input": m.input = v
            case "units": break
            default: throw Problem("--mask \(name): no option '\(k)' (anchor, input, units)")
            }
        }
        return m
    }

    // MARK: - Parts

    /// labels=person+car: the labels a zone or line counts.
    private static func labels(_ v: String, _ what: String) throws(Problem) -> Set<String> {
        let names = v.split(separator: "+").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !names.isEmpty, names.allSatisfy({ !$0.isEmpty }) else { throw Problem("\(what): labels are names joined by + (labels=person+car), not '\(v)'") }
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

    private static func number(_ v: String, _ k: String, _ text: String, _ range: ClosedRange<Double>) throws(Problem) -> Double {
        guard let n = Double(v), n.isFinite, range.contains(n) else {
            throw Problem("\(text): \(k) is a number from \(Point.text(range.lowerBound)) to \(Point.text(range.upperBound)), not '\(v)'")
        }
        return n
    }

    private static func anchor(_ v: String, _ text: String) throws(Problem) -> Anchor {
        guard let a = Anchor(rawValue: v) else {
            throw Problem("\(text): anchor is one of \(Anchor.allCases.map(\.rawValue).joined(separator: ", ")), not '\(v)'")
        }
        return a
    }

    /// NAME=POINTS[:OPTIONS], the points read and placed (pixels or fractions).
    private static func named(_ text: String, _ flag: String) throws(Problem)
        -> (name: String, points: (points: [Point], fractions: Bool), options: [(String, String)]) {
        let (name, rest) = split(text, at: "=")
        guard !name.isEmpty, !rest.isEmpty,
              name.unicodeScalars.allSatisfy({ ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "_" || $0 == "-" }) else {
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
        let units = options.first { $0.0 == "units" }?.1 ?? "auto"
        let within = points.allSatisfy { (0...1).contains($0.x) && (0...1).contains($0.y) }
        let fractions: Bool
        switch units {
        case "auto": fractions = within
        case "fractions":
            guard within else { throw Problem("\(flag) \(name): with units=fractions every point is 0..1 of the frame; \(points.first { !((0...1).contains($0.x) && (0...1).contains($0.y)) }!) is outside it") }
            fractions = true
        case "pixels":
            guard points.allSatisfy({ $0.x >= 0 && $0.y >= 0 }) else { throw Problem("\(flag) \(name): a point in pixels is not negative") }
            fractions = false
        default: throw Problem("\(flag) \(name): units is auto, pixels or fractions, not '\(units)'")
        }
        if !fractions, let negative = points.first(where: { $0.x < 0 || $0.y < 0 }) {
            throw Problem("\(flag) \(name): \(negative) is outside the frame (pixels are not negative)")
        }
        return (name, (points, fractions), options)
    }
}
