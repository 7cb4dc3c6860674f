/// One box a plugin gave for a frame: what the tracker follows.
public struct Detection: Sendable {
    public var box: Box
    /// The result's `label` (else its type: "face", "barcode"): a track's label is the one its
    /// boxes had most often.
    public var label: String
    /// The result's `confidence`, 1 when it has none.
    public var confidence: Double

    public init(box: Box, label: String, confidence: Double) {
        self.box = box
        self.label = label
        self.confidence = confidence
    }
}

/// How boxes are followed (ByteTrack's association, with time in seconds where it counted frames).
public struct TrackerSettings: Equatable, Sendable {
    /// Boxes at or above it start tracks and are matched first; below it, down to `low`, they only
    /// keep tracks that are already followed (ByteTrack's second pass: an occluded object's weak box).
    public var high = 0.4 {
        didSet { highGiven = true }
    }
    /// Whether `high` was given: if not, it follows what the plugin reports (`following(confidence:)`).
    public private(set) var highGiven = false
    public var low = 0.1
    /// Frames a new track must be seen in a row before it is reported (and given its id).
    public var minHits = 3
    /// Seconds a track is kept through frames it is not seen in: an object hidden for less keeps its id.
    public var lost = 1.5
    /// The least overlap (IoU) of a box with a track's predicted box for the two to be matched:
    /// in the first pass, the second (weak boxes), and for tracks not yet reported.
    public var matchIoU = 0.2
    public var lowMatchIoU = 0.5
    public var newMatchIoU = 0.3
    /// Boxes matched to tracks of their own label only. Off by default: a detector's label flips
    /// between classes on one object (car and truck, man and woman), which is still one object.
    public var byLabel = false

    /// The settings for a plugin that reports boxes from `confidence` up: a box it reports is not
    /// to be left without a track for being under `high`, so `high` (when not given) comes down to
    /// it, and `low` with it.
    public func following(confidence: Double?) -> TrackerSettings {
        guard let confidence, !highGiven, confidence < high else { return self }
        var s = self
        s.high = confidence
        s.highGiven = false
        s.low = min(s.low, confidence)
        return s
    }

    public init() {}
}

/// A followed object.
struct Track {
    enum State { case new, tracked, lost }

    /// 0 until the track is reported (`minHits` frames seen in a row).
    var id = 0
    /// The label its boxes had most often (the first such, on a tie), and how often each label came.
    private(set) var label: String
    private(set) var labels: [String: Int]
    var filter: KalmanBoxFilter
    var state = State.new
    /// Frames it was seen in.
    var frames = 1
    let firstTime: Double
    var lastTime: Double
    let firstBox: Box
    var lastBox: Box
    /// How much its boxes jitter: the width of the bands it must pass to change side.
    private(set) var jitter = TrackJitter()

    /// Labels a track keeps a count for (a plugin that makes a new one per frame cannot grow it).
    static let mostLabels = 16

    init(_ d: Detection, time: Double) {
        label = d.label
        labels = [d.label: 1]
        filter = KalmanBoxFilter(d.box)
        firstTime = time
        lastTime = time
        firstBox = d.box
        lastBox = d.box
        jitter.see(d.box, time: time)
    }

    mutating func see(_ d: Detection, time: Double) {
        filter.update(d.box)
        frames += 1
        if labels[d.label] != nil || labels.count < Self.mostLabels {
            labels[d.label, default: 0] += 1
            if labels[d.label]! > labels[label]! { label = d.label }
        }
        lastTime = time
        lastBox = d.box
        jitter.see(d.box, time: time)
    }
}

/// ByteTrack (Zhang et al., 2022) for boxes of any plugin, across labels (as ByteTrack and
/// supervision associate; per label with `byLabel`): each frame, every track's
/// box is predicted (KalmanBoxFilter); the strong boxes are matched to followed and lost tracks by
/// overlap, then the weak boxes to the followed tracks left; new tracks are matched to the strong
/// boxes left and reported after `minHits` frames; strong boxes left start new tracks; a track not
/// seen for `lost` seconds ends.
struct Tracker {
    let settings: TrackerSettings
    private(set) var tracks: [Track] = []
    private var nextID = 1
    private var lastTime: Double?
    /// Tracks reported so far.
    var reported: Int { nextID - 1 }

    init(_ settings: TrackerSettings) {
        self.settings = settings
    }

    /// What one frame did to the tracks.
    struct Step {
        /// Each detection's track, by its index in the frame's detections: reported tracks only.
        var trackOf: [Int: Int] = [:]
        /// Tracks reported for the first time this frame, and tracks that ended (not seen for `lost` seconds).
        var started: [Track] = []
        var ended: [Track] = []
        /// The reported tracks seen this frame: (track, detection index).
        var seen: [(track: Track, detection: Int)] = []
        /// Boxes that joined no track, new or reported (under `low`, or weak with no track to keep).
        var untracked = 0
    }

    /// Follows the boxes of a frame at `time` (seconds; never earlier than the frame before).
    mutating func update(_ detections: [Detection], time: Double) -> Step {
        let dt = lastTime.map { max(0, time - $0) } ?? 0
        lastTime = time
        for i in tracks.indices { tracks[i].filter.predict(seconds: dt, still: tracks[i].state != .tracked) }
        var step = Step()
        var matchedTrack = Set<Int>()
        var placed = 0
        // One group of every box and track, or (byLabel) a group per label.
        let groups: [String?] = settings.byLabel ? Set(detections.map(\.label)).union(tracks.map(\.label)).sorted() : [nil]
        for label in groups {
            let mine = detections.indices.filter { label == nil || detections[$0].label == label }
            let strong = mine.filter { detections[$0].confidence >= settings.high }
            let weak = mine.filter { detections[$0].confidence < settings.high && detections[$0].confidence >= settings.low }
            let pool = tracks.indices.filter { (label == nil || tracks[$0].label == label) && tracks[$0].state != .new }
            // 1: strong boxes, followed and lost tracks.
            let first = match(pool, strong, detections, minIoU: settings.matchIoU)
            // 2: weak boxes, the followed tracks left (a lost track is not found again by a weak box).
            let leftTracked = pool.filter { !first.tracks.contains($0) && tracks[$0].state == .tracked }
            let second = match(leftTracked, weak, detections, minIoU: settings.lowMatchIoU)
            // 3: the strong boxes left, tracks not yet reported.
            let fresh = tracks.indices.filter { (label == nil || tracks[$0].label == label) && tracks[$0].state == .new }
            let strongLeft = strong.filter { !first.detections.contains($0) }
            let third = match(fresh, strongLeft, detections, minIoU: settings.newMatchIoU)
            // Every strong box left joins a new track (matched in the third pass, or its first box).
            placed += first.pairs.count + second.pairs.count + strongLeft.count
            for (t, d) in first.pairs + second.pairs + third.pairs {
                tracks[t].see(detections[d], time: time)
                matchedTrack.insert(t)
                if tracks[t].state == .new {
                    if tracks[t].frames >= settings.minHits { report(t, &step) }
                } else {
                    tracks[t].state = .tracked
                }
                if tracks[t].id != 0 { step.trackOf[d] = tracks[t].id }
            }
            // Strong boxes that matched nothing start tracks.
            for d in strongLeft where !third.detections.contains(d) {
                tracks.append(Track(detections[d], time: time))
                matchedTrack.insert(tracks.count - 1)
                if settings.minHits <= 1 {
                    report(tracks.count - 1, &step)
                    step.trackOf[d] = tracks[tracks.count - 1].id
                }
            }
        }
        // Unmatched: a followed track is lost; a new one that missed a frame is dropped; a lost one past `lost` ends.
        var kept: [Track] = []
        for (i, t) in tracks.enumerated() {
            var t = t
            if !matchedTrack.contains(i) {
                if t.state == .new { continue }
                t.state = .lost
                if time - t.lastTime > settings.lost {
                    step.ended.append(t)
                    continue
                }
            }
            kept.append(t)
        }
        tracks = kept
        let byID = Dictionary(uniqueKeysWithValues: tracks.filter { $0.id != 0 }.map { ($0.id, $0) })
        step.seen = step.trackOf.sorted { $0.key < $1.key }.compactMap { d, id in byID[id].map { ($0, d) } }
        step.untracked = detections.count - placed
        return step
    }

    /// Ends every track (the input ended): the reported ones are returned.
    mutating func finish() -> [Track] {
        defer { tracks = [] }
        return tracks.filter { $0.id != 0 }
    }

    private mutating func report(_ t: Int, _ step: inout Step) {
        tracks[t].state = .tracked
        tracks[t].id = nextID
        nextID += 1
        step.started.append(tracks[t])
    }

    /// The least-cost pairs of tracks and detections by 1 - IoU of the predicted box and the box.
    /// A lost track is also matched by its last box seen (OC-SORT's recovery by observation): an
    /// object that stopped while it was not seen is where it was, not where its motion led.
    private func match(_ ts: [Int], _ ds: [Int], _ detections: [Detection], minIoU: Double)
        -> (pairs: [(Int, Int)], tracks: Set<Int>, detections: Set<Int>) {
        guard !ts.isEmpty, !ds.isEmpty else { return ([], [], []) }
        var cost = [Double](repeating: 1, count: ts.count * ds.count)
        for (i, t) in ts.enumerated() {
            let predicted = tracks[t].filter.box, last = tracks[t].state == .lost ? tracks[t].lastBox : nil
            for (j, d) in ds.enumerated() {
                let box = detections[d].box
                cost[i * ds.count + j] = 1 - max(predicted.iou(box), last?.iou(box) ?? 0)
            }
        }
        let pairs = Assignment.solve(cost, rows: ts.count, columns: ds.count, limit: 1 - minIoU).map { (ts[$0.row], ds[$0.column]) }
        return (pairs, Set(pairs.map(\.0)), Set(pairs.map(\.1)))
    }
}
