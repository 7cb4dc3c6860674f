/// The fields of a plugin's result that the analytics read: its box (`bounds`, in the frame's
/// pixels), label, confidence, and whether it has a `track_id` of its own. JSONValidator notes
/// them while it checks the object, so no stage parses a result line again.
public struct ResultFields: Sendable, Equatable {
    public struct Bounds: Sendable, Equatable {
        public var x: Double, y: Double, width: Double, height: Double

        public init(x: Double, y: Double, width: Double, height: Double) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

    /// `bounds` {x, y, width, height}: nil unless all four are numbers.
    public var bounds: Bounds? {
        guard let x, let y, let width, let height else { return nil }
        return Bounds(x: x, y: y, width: width, height: height)
    }
    /// The largest distance from the frame's origin a box's number may say, in pixels: ten times
    /// the widest frame cvhost takes. A plugin's `x: 1e300` is a bug of the plugin's, and no
    /// stage (a snapshot's crop, a drawn box, a zone's test) should have to carry it.
    public static let maxCoordinate = 655_360.0

    /// Why `bounds` is no box in a frame (a number past `maxCoordinate`, a negative size), or nil.
    public var boundsProblem: String? {
        for (name, value) in [("x", x), ("y", y), ("width", width), ("height", height)] {
            guard let value else { continue }
            if abs(value) > Self.maxCoordinate { return "bounds.\(name) is \(value), beyond ±\(Int(Self.maxCoordinate)) pixels" }
            if (name == "width" || name == "height") && value < 0 { return "bounds.\(name) is \(value), below 0" }
        }
        return nil
    }

    /// `label`, when it is a string.
    public var label: String?
    /// `confidence`, when it is a number.
    public var confidence: Double?
    /// The object names `track_id` (any value): the plugin tracks its results itself.
    public var hasTrackID = false
    var x: Double?, y: Double?, width: Double?, height: Double?

    public init() {}

    /// Which of these fields a member is: a key of the result object (`depth` 0), or of its
    /// `bounds` object (1).
    enum Slot {
        case none, label, confidence, trackID, bounds, x, y, width, height

        init(key: ArraySlice<UInt8>, depth: Int, container: Slot) {
            switch (depth, container) {
            case (0, _):
                self = switch String(decoding: key, as: UTF8.self) {
                case "label": .label
                case "confidence": .confidence
                case "track_id": .trackID
                case "bounds": .bounds
                default: .none
                }
            case (1, .bounds):
                self = switch String(decoding: key, as: UTF8.self) {
                case "x": .x
                case "y": .y
                case "width": .width
                case "height": .height
                default: .none
                }
            default: self = .none
            }
        }
    }

    mutating func note(_ value: Double, in slot: Slot) {
        switch slot {
        case .confidence: confidence = value
        case .x: x = value
        case .y: y = value
        case .width: width = value
        case .height: height = value
        default: break
        }
    }
}
