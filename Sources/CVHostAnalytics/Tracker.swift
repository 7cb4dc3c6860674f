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
    /// Seconds a reported track's box must stay where it settled (`stationaryIoU` with the box it
    /// settled at) to be stationary (0: never). In seconds, not detections (Frigate counts frames):
    /// a camera gated on motion sees a parked car once a refresh, so a count of detections would
    /// make the same car stationary at another time gated and ungated.
    public var stationary = 10.0
    /// The least overlap of a track's box with the box it settled at to be still there (Frigate's 0.6).
    static let stationaryIoU = 0.6

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
    /// Of the seconds since it was last seen, those that do not count against `lost`: no motion
    /// was seen anywhere (nothing left), or it was stationary and no motion touched it.
    var held = 0.0
    /// The last time it was seen or held: present in that frame.
    var presentTime: Double
    /// Where its box settled, and since when: it is stationary once there for `stationary` seconds.
    private(set) var settled: (box: Box, time: Double)
    private(set) var stationary = false

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
        presentTime = time
        settled = (d.box, time)
        jitter.see(d.box, time: time)
    }

    /// Seen at `time`: whether it became stationary (true), moved from where it was stationary
    /// (false), or neither (nil), with `stationaryAfter` seconds settled to be stationary (0: never).
    mutating func see(_ d: Detection, time: Double, stationaryAfter: Double) -> Bool? {
        see(d, time: time)
        let was = stationary
        if d.box.iou(settled.box) < TrackerSettings.stationaryIoU {
            settled = (d.box, time)
            stationary = false
        } else if stationaryAfter > 0, time - settled.time >= stationaryAfter {
            stationary = true
        }
        return stationary == was ? nil : stationary
    }

    private mutating func see(_ d: Detection, time: Double) {
        filter.update(d.box)
        frames += 1
        if labels[d.label] != nil || labels.count < Self.mostLabels {
            labels[d.label, default: 0] += 1
            if labels[d.label]! > labels[label]! { label = d.label }
        }
        lastTime = time
        presentTime = time
        held = 0
        lastBox = d.box
        jitter.see(d.box, time: time)
    }

    /// Seconds unseen that count against `lost` at `time`.
    func unseen(at time: Double) -> Double { time - lastTime - held }
}

/// ByteTrack (Zhang et al., 2022) for boxes of any plugin, across labels (as ByteTrack and
/// supervision associate; per label with `byLabel`): each frame, every track's
/// box is predicted (KalmanBoxFilter); the strong boxes are matched to followed and lost tracks by
/// overlap, then the weak boxes to the followed tracks left; new tracks are matched to the strong
/// boxes left and reported after `minHits` frames; strong boxes left start new tracks; a track not
/// seen for `lost` seconds ends.
///
/// With the host's motion (`MotionLook`), what did not move is not lost for being unseen (Frigate's
/// stationary objects): time in which no motion was seen anywhere does not count against `lost`
/// (nothing can have left; a camera gated on motion gives no frames then), and a stationary track
/// that no motion touches is held where it is, present, through frames it is not found in.
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
        /// Reported stationary tracks not found this frame but held where they are (no motion touched them).
        var held: [Track] = []
        /// Reported tracks that became stationary (true) or moved from where they were (false) this frame.
        var stationary: [(track: Track, stationary: Bool)] = []
    }

    /// Follows the boxes of a frame at `time` (seconds; never earlier than the frame before), with
    /// what the host's motion saw since the frame before (nil: motion is not looked for).
    mutating func update(_ detections: [Detection], time: Double, motion: MotionLook? = nil) -> Step {
        let dt = lastTime.map { max(0, time - $0) } ?? 0
        // Nothing moved in the still part: no track was lost then, nor went on moving.
        let still = min(dt, max(0, motion?.stillSeconds ?? 0))
        lastTime = time
        for i in tracks.indices {
            tracks[i].held += still
            tracks[i].filter.predict(seconds: dt - still, still: tracks[i].state != .tracked)
        }
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
                let change = tracks[t].see(detections[d], time: time, stationaryAfter: settings.stationary)
                matchedTrack.insert(t)
                if tracks[t].state == .new {
                    if tracks[t].frames >= settings.minHits { report(t, &step) }
                } else {
                    tracks[t].state = .tracked
                }
                if tracks[t].id != 0 {
                    step.trackOf[d] = tracks[t].id
                    if let change { step.stationary.append((tracks[t], change)) }
                }
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
        // Unmatched: a stationary track no motion touched is held; a followed track is lost; a new
        // one that missed a frame is dropped; a lost one unseen past `lost` ends.
        var kept: [Track] = []
        for (i, t) in tracks.enumerated() {
            var t = t
            if !matchedTrack.contains(i) {
                if t.state == .new { continue }
                if t.stationary, let motion, !motion.touches(t.lastBox) {
                    t.held += dt - still
                    t.presentTime = time
                    if t.id != 0 { step.held.append(t) }
                } else {
                    t.state = .lost
                    if t.unseen(at: time) > settings.lost {
                        step.ended.append(t)
                        continue
                    }
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
    /// A lost or stationary track is also matched by its last box seen (OC-SORT's recovery by
    /// observation): an object that stopped while it was not seen is where it was, not where its motion led.
    private func match(_ ts: [Int], _ ds: [Int], _ detections: [Detection], minIoU: Double)
        -> (pairs: [(Int, Int)], tracks: Set<Int>, detections: Set<Int>) {
        guard !ts.isEmpty, !ds.isEmpty else { return ([], [], []) }
        var cost = [Double](repeating: 1, count: ts.count * ds.count)
        for (i, t) in ts.enumerated() {
            // A stationary track is where it settled too (its filter may still carry the speed it came with).
            let predicted = tracks[t].filter.box, last = tracks[t].state == .lost || tracks[t].stationary ? tracks[t].lastBox : nil
            for (j, d) in ds.enumerated() {
                let box = detections[d].box
                cost[i * ds.count + j] = 1 - max(predicted.iou(box), last?.iou(box) ?? 0)
            }
        }
        let pairs = Assignment.solve(cost, rows: ts.count, columns: ds.count, limit: 1 - minIoU).map { (ts[$0.row], ds[$0.column]) }
        return (pairs, Set(pairs.map(\.0)), Set(pairs.map(\.1)))
    }
}
