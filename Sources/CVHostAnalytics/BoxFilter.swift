/// What boxes of a label are too doubtful to follow (Frigate's object filters): a score under
/// `minScore`, an area outside `minArea`...`maxArea`, a shape (width / height) outside
/// `minRatio`...`maxRatio`. An area of at most 1 is a share of the frame's area (0.01: a hundredth
/// of the picture), above 1 pixels. A box it refuses is never tracked (so never counted), and is
/// counted by the reason (`filtered_results`); its result still reaches the outputs as the plugin
/// gave it.
///
///     --filter LABEL[:min_score=S,min_area=A,max_area=A,min_ratio=R,max_ratio=R,input=ID]
///
/// `LABEL` `*` is every label; a label's own filter is used before `*`'s.
public struct BoxFilter: Equatable, Sendable {
    public let label: String
    public var minScore: Double?
    public var minArea: Double?
    public var maxArea: Double?
    public var minRatio: Double?
    public var maxRatio: Double?
    /// The input it is for; nil: every input.
    public var input: String?

    public static let everyLabel = "*"

    public init(label: String) {
        self.label = label
    }

    /// Why `d` is refused on a frame of `width` x `height` (the reason counted), nil when it passes.
    func refusal(_ d: Detection, width: Int, height: Int) -> String? {
        if let minScore, d.confidence < minScore { return "min_score" }
        let area = d.box.width * d.box.height, frame = Double(width) * Double(height)
        func pixels(_ a: Double) -> Double { a <= 1 ? a * frame : a }
        if let minArea, area < pixels(minArea) { return "min_area" }
        if let maxArea, area > pixels(maxArea) { return "max_area" }
        let ratio = d.box.width / d.box.height
        if let minRatio, ratio < minRatio { return "min_ratio" }
        if let maxRatio, ratio > maxRatio { return "max_ratio" }
        return nil
    }

    /// The reasons a box is refused (each a label of cvhost_filtered_results_total), a mask's last.
    public static let reasons = ["min_score", "min_area", "max_area", "min_ratio", "max_ratio", BoxMask.reason]
}
