import CVHostCore

/// What `--snapshots` and `--clips` ask for (the same strings in a config file):
///
///     --snapshots DIR[:on=EVENTS,crop=true,margin=0.25,draw=true,from=frame,max_gb=1,max_age=7d,min_free_gb=1]
///     --clips DIR[:on=EVENTS,pre=5,post=10,max=120,max_gb=10,max_age=7d,min_free_gb=1]
///
/// EVENTS are event kinds joined by `+` (line.crossed+zone.entered). Each value is checked here: a
/// one-line reason naming the setting.
public struct EvidenceSettings: Equatable, Sendable {
    public enum Kind: String, Sendable {
        case snapshots, clips
        var flag: String { "--\(rawValue)" }
    }

    /// What a folder may hold: at most `maxBytes` of cvhost's files, none older than `maxAge`
    /// seconds, and never less than `minFreeBytes` free on its disk. The oldest go first.
    public struct Budget: Equatable, Sendable {
        public var maxBytes: UInt64
        public var maxAge: Double?
        public var minFreeBytes: UInt64

        package init(maxBytes: UInt64, maxAge: Double?, minFreeBytes: UInt64) {
            self.maxBytes = maxBytes
            self.maxAge = maxAge
            self.minFreeBytes = minFreeBytes
        }
    }

    public struct Problem: Error, CustomStringConvertible {
        public let description: String
    }

    /// The events evidence can be kept of.
    public static let events = ["result", "track.started", "track.ended", "line.crossed", "zone.entered", "zone.exited", "zone.dwell"]

    public let kind: Kind
    public var folder: String
    /// The events that make one; nil: the run's default (the counts' events with --track, else results).
    public var on: [String]?
    /// Snapshots: the event's box (with `margin` of its size around it) rather than the whole frame.
    public var crop = false
    public var margin = 0.25
    /// Snapshots: the frame's boxes drawn on it with their labels.
    public var draw = false
    /// Snapshots: of the frame the event came with (`frame`), or of the camera's record stream
    /// (`record`, `--input ...,record=URL`): its keyframe nearest the event, decoded when asked.
    public var fromRecord = false
    /// Clips: seconds before the event and after the last event that extends the clip, and the longest clip.
    public var pre = 5.0
    public var post = 10.0
    public var maxSeconds = 120.0
    public var budget: Budget

    public init(parsing text: String, kind: Kind) throws(Problem) {
        self.kind = kind
        let flag = kind.flag
        let (path, optionText) = Self.split(text, at: ":")
        guard !path.isEmpty else { throw Problem(description: "\(flag) needs a folder: \(flag) /var/lib/cvhost/\(kind.rawValue)") }
        folder = path
        budget = Budget(maxBytes: kind == .clips ? 10 << 30 : 1 << 30, maxAge: 7 * 86400, minFreeBytes: 1 << 30)
        var given = Set<String>()
        for part in optionText.split(separator: ",", omittingEmptySubsequences: true) {
            let (k, v) = Self.split(String(part), at: "=")
            guard !k.isEmpty, !v.isEmpty else { throw Problem(description: "\(flag) \(path): '\(part)' is not key=value") }
            guard given.insert(k).inserted else { throw Problem(description: "\(flag) \(path): \(k) is given twice") }
            func number(_ range: ClosedRange<Double>) throws(Problem) -> Double {
                guard let n = Double(v), n.isFinite, range.contains(n) else {
                    throw Problem(description: "\(flag) \(path): \(k) is a number from \(Self.text(range.lowerBound)) to \(Self.text(range.upperBound)), not '\(v)'")
                }
                return n
            }
            switch (k, kind) {
            case ("on", _):
                let names = v.split(separator: "+").map(String.init)
                for name in names where !Self.events.contains(name) {
                    let hint = Suggestion.closest(to: name, in: Self.events).map { " (did you mean \($0)?)" } ?? ""
                    throw Problem(description: "\(flag) \(path): no event '\(name)'\(hint): on= takes \(Self.events.joined(separator: ", ")), joined by +")
                }
                on = names
            case ("crop", .snapshots), ("draw", .snapshots):
                guard v == "true" || v == "false" else { throw Problem(description: "\(flag) \(path): \(k) is true or false, not '\(v)'") }
                if k == "crop" { crop = v == "true" } else { draw = v == "true" }
            case ("margin", .snapshots): margin = try number(0...10)
            case ("from", .snapshots):
                guard v == "frame" || v == "record" else {
                    throw Problem(description: "\(flag) \(path): from is frame (the event's own frame) or record (the camera's record stream, --input ...,record=URL), not '\(v)'")
                }
                fromRecord = v == "record"
            case ("pre", .clips): pre = try number(0...60)
            case ("post", .clips): post = try number(0...600)
            case ("max", .clips): maxSeconds = try number(1...3600)
            case ("max_gb", _): budget.maxBytes = UInt64(try number(0.001...100_000) * Double(1 << 30))
            case ("min_free_gb", _): budget.minFreeBytes = UInt64(try number(0...100_000) * Double(1 << 30))
            case ("max_age", _):
                guard let seconds = Self.age(v) else {
                    throw Problem(description: "\(flag) \(path): max_age is a time such as 7d, 12h, 30m or 600s (up to 3650d), or none, not '\(v)'")
                }
                budget.maxAge = seconds
            default:
                let options = kind == .clips ? "on, pre, post, max, max_gb, max_age, min_free_gb" : "on, crop, margin, draw, from, max_gb, max_age, min_free_gb"
                throw Problem(description: "\(flag) \(path): no option '\(k)' (\(options))")
            }
        }
        if kind == .clips, pre + post > maxSeconds {
            throw Problem(description: "\(flag) \(path): pre + post (\(Self.text(pre + post)) s) is longer than max (\(Self.text(maxSeconds)) s): raise max or shorten them")
        }
    }

    /// `7d`, `12h`, `30m`, `600s` or `600`; `none`: kept whatever its age.
    static func age(_ v: String) -> Double?? {
        if v == "none" { return .some(nil) }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var number = Substring(v), unit = 1.0
        if let last = v.last, let u = units[last] {
            number = v.dropLast()
            unit = u
        }
        guard let n = Double(number), n.isFinite, n > 0, n * unit <= 3650 * 86400 else { return nil }
        return .some(n * unit)
    }

    private static func split(_ s: String, at c: Character) -> (String, String) {
        guard let i = s.firstIndex(of: c) else { return (s, "") }
        return (String(s[..<i]), String(s[s.index(after: i)...]))
    }

    static func text(_ d: Double) -> String { d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : String(d) }
}
