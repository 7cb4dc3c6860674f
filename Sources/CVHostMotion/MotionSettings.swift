/// How an input's motion is looked for (MotionDetector): on a small grey picture, against a
/// background that follows slow changes (light, shadows), regions of pixels that changed.
///
///     height=120,threshold=30,min_area=10,alpha=0.01,lightning=0.8,contrast=true,hold=2
public struct MotionSettings: Equatable, Sendable {
    /// Rows of the small picture motion is looked for in (its width follows the frame's shape):
    /// a person far away is still a few pixels; noise and compression blocks are averaged away.
    public var height = 120
    /// How much a pixel of the small picture must differ from the background (0-255, after the
    /// contrast is stretched) to have changed.
    public var threshold = 30
    /// The fewest pixels of the small picture a region of change needs to be motion.
    public var minArea = 10
    /// The background's weight for each new frame: it takes in a change that stays (a car parked,
    /// the light of evening) over about 1/alpha frames.
    public var alpha = 0.01
    /// A change of more than this share of the picture at once is no motion (a lightning flash, a
    /// camera switching to infrared, auto exposure): the background is learnt anew.
    public var lightning = 0.8
    /// The threshold scaled as if the small picture's contrast were stretched between its 4th and
    /// 96th percentiles (their average over the last 50 frames; at most 10x): motion in a dark or
    /// hazy picture is seen as in a clear one.
    public var contrast = true
    /// Seconds without motion before motion has ended (MotionWatch): a person who stands still a
    /// moment is not two motions.
    public var hold = 2.0

    public init() {}

    public struct Problem: Error, CustomStringConvertible {
        public let description: String
    }

    /// `key=value,...` (or `on`: the defaults; `true` too, which a config file's YAML may make of `on`).
    public init(parsing text: String) throws(Problem) {
        self.init()
        guard text != "on" && text != "true" else { return }
        for part in text.split(separator: ",") {
            let kv = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else { throw Problem(description: "motion: '\(part)' is not key=value (height, threshold, min_area, alpha, lightning, contrast, hold)") }
            let (k, v) = (kv[0], kv[1])
            func number(_ range: ClosedRange<Double>) throws(Problem) -> Double {
                guard let n = Double(v), range.contains(n) else {
                    throw Problem(description: "motion: \(k) is a number from \(range.lowerBound) to \(range.upperBound), not '\(v)'")
                }
                return n
            }
            switch k {
            case "height": height = Int(try number(16...1080))
            case "threshold": threshold = Int(try number(1...255))
            case "min_area": minArea = Int(try number(1...100_000))
            case "alpha": alpha = try number(0.0001...1)
            case "lightning": lightning = try number(0.05...1)
            case "hold": hold = try number(0...3600)
            case "contrast":
                guard v == "true" || v == "false" else { throw Problem(description: "motion: contrast is true or false, not '\(v)'") }
                contrast = v == "true"
            default: throw Problem(description: "motion: no setting '\(k)' (height, threshold, min_area, alpha, lightning, contrast, hold)")
            }
        }
    }
}
