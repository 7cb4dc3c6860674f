/// Whether a tracked plugin gets the detections it asks for. A plugin that falls behind a live
/// input (a CNN too slow for the camera, several cameras on two cores) has frames dropped as late
/// before it sees them; tracks then jump, and zones and lines miss what happens between the frames
/// it did see, with nothing said. This watch counts, over windows of the input's media time, the
/// frames the plugin processed, those its own rate cap passed over (`max_fps`: asked not to see),
/// and the rest of the input's frames (by their sequence numbers): those dropped as late. When it
/// processed less than `enough` of what it asked for (processed + late), it says so, once.
///
/// A value: fed a processed frame at a time by the tracked plugin's analytics stage (its slot's
/// order), it keeps no clock of its own.
struct DetectionRateWatch {
    /// Media seconds left alone at the start (a model loading, a stream settling).
    static let warmUp = 5.0
    /// Media seconds a window spans.
    static let window = 10.0
    /// The share of what it asked for below which it is said.
    static let enough = 0.8

    /// What a window found.
    struct Shortfall: Equatable {
        /// Detections a second it got, and asked for (what it got and what was dropped as late).
        let got: Double
        let asked: Double
    }

    /// Passed-over frames are known up to this many between two processed frames
    /// (RunnerStages.mostPassedOver keeps no more): a window with more is not judged.
    let mostPassedOver: Int
    private var firstTime: Double?
    private var start: (time: Double, sequence: UInt64)?
    private var processed = 0, passedOver = 0
    private var unknown = false
    private(set) var said = false

    init(mostPassedOver: Int) {
        self.mostPassedOver = mostPassedOver
    }

    /// A frame the plugin processed: its sequence number, its media time (seconds), and how many
    /// frames its rate cap passed over since the one before. - Returns: the shortfall, the once it is found.
    mutating func processed(sequence: UInt64, time: Double, passedOver between: Int) -> Shortfall? {
        guard !said else { return nil }
        let first = firstTime ?? time
        firstTime = first
        guard time - first >= Self.warmUp else { return nil }
        guard let s = start, sequence > s.sequence, time >= s.time else {
            // The first window begins here (and again after the sequence or time went back: an input restarted).
            begin(sequence, time)
            return nil
        }
        processed += 1
        passedOver += between
        if between >= mostPassedOver { unknown = true }
        let span = time - s.time
        guard span >= Self.window else { return nil }
        defer { begin(sequence, time) }
        let frames = Int(clamping: sequence - s.sequence)
        let late = frames - processed - passedOver
        guard !unknown, late > 0 else { return nil }
        let got = Double(processed) / span, asked = Double(processed + late) / span
        guard got < Self.enough * asked else { return nil }
        said = true
        return Shortfall(got: got, asked: asked)
    }

    private mutating func begin(_ sequence: UInt64, _ time: Double) {
        start = (time, sequence)
        processed = 0
        passedOver = 0
        unknown = false
    }
}
