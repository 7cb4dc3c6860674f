import CVHostLines
import Foundation
@testable import CVHostAnalytics

/// Scripted scenes with ground truth: objects moving along known paths, seen by a noisy detector
/// (boxes that jitter a few pixels, frames in which an object is missed, boxes of nothing), at any
/// frame rate. What the analytics make of them is compared with what the script says happened.
struct Scene {
    struct Object {
        let label: String
        let width: Double, height: Double
        /// Where its box's centre is at a time, nil while it is hidden or not there.
        let at: (Double) -> Point?
        var confidence = 0.8
        /// A detector that flips the object's label from frame to frame: each label with its share of frames.
        var flips: [(label: String, share: Double)]? = nil
        /// Its box's size at a time, when it changes (nearer the camera, larger); else width x height.
        var sizeAt: ((Double) -> (width: Double, height: Double))? = nil
    }

    var objects: [Object]
    let seconds: Double
    /// Pixels of jitter each side, the share of frames an object is missed in, boxes of nothing a second.
    var jitter = 3.0
    var missed = 0.08
    var falseBoxesPerSecond = 1.0
    /// The detector's noise: one scene is the same every run.
    var seed: UInt64 = 7
    /// The frame's size at a time (a camera that changes its stream), and the scale of every box and point in it.
    var frameSize: (Double) -> (width: Int, height: Int) = { _ in (1280, 720) }

    /// A path through points at a speed (pixels a second), starting at `start`; nil outside it.
    static func path(_ points: [Point], speed: Double, start: Double = 0, pauses: [Int: Double] = [:]) -> (Double) -> Point? {
        // Legs, and a pause (seconds) at the end of leg i if asked.
        var legs: [(from: Point, to: Point, begin: Double, end: Double, pause: Double)] = []
        var t = start
        for i in 0..<(points.count - 1) {
            let d = points[i].distance(to: points[i + 1]) / speed
            let pause = pauses[i] ?? 0
            legs.append((points[i], points[i + 1], t, t + d, pause))
            t += d + pause
        }
        return { time in
            for leg in legs {
                if time >= leg.begin && time <= leg.end {
                    let f = (time - leg.begin) / max(leg.end - leg.begin, 1e-9)
                    return Point(leg.from.x + f * (leg.to.x - leg.from.x), leg.from.y + f * (leg.to.y - leg.from.y))
                }
                if time > leg.end && time <= leg.end + leg.pause { return leg.to }
            }
            return nil
        }
    }

    /// The detector's output at `fps`: each frame's time, boxes, and which object each box is of (nil: of nothing).
    func frames(fps: Double) -> [(time: Double, detections: [Detection], truth: [Int?])] {
        var random = Random(seed: seed)
        var out: [(Double, [Detection], [Int?])] = []
        let count = Int(seconds * fps)
        for n in 0..<count {
            let time = Double(n) / fps
            var detections: [Detection] = [], truth: [Int?] = []
            for (i, o) in objects.enumerated() {
                guard let c = o.at(time), random.unit() >= missed else { continue }
                let (width, height) = o.sizeAt?(time) ?? (o.width, o.height)
                let jx = (random.unit() * 2 - 1) * jitter, jy = (random.unit() * 2 - 1) * jitter
                let jw = (random.unit() * 2 - 1) * jitter, jh = (random.unit() * 2 - 1) * jitter
                var label = o.label
                if let flips = o.flips {
                    var pick = random.unit()
                    label = flips.last!.label
                    for f in flips {
                        if pick < f.share { label = f.label; break }
                        pick -= f.share
                    }
                }
                // Scene coordinates are of a 1280x720 frame: scaled to the frame's size now.
                let s = Double(frameSize(time).width) / 1280
                detections.append(Detection(box: Box(x: (c.x - width / 2 + jx) * s, y: (c.y - height / 2 + jy) * s,
                                                     width: (width + jw) * s, height: (height + jh) * s),
                                            label: label, confidence: o.confidence))
                truth.append(i)
            }
            // Boxes of nothing, each in one frame, somewhere.
            if random.unit() < falseBoxesPerSecond / fps {
                detections.append(Detection(box: Box(x: random.unit() * 1200, y: random.unit() * 600, width: 50, height: 50),
                                            label: objects.first?.label ?? "person", confidence: 0.45))
                truth.append(nil)
            }
            out.append((time, detections, truth))
        }
        return out
    }

    /// Runs the scene through `analytics`: the events, and the track ids each object was given.
    func run(_ analytics: BoxAnalytics, fps: Double) -> (events: [AnalyticsEvent], idsOf: [Int: Set<Int>], falseTracks: Int) {
        var events: [AnalyticsEvent] = [], ids: [Int: Set<Int>] = [:], falseTracks = 0
        for frame in frames(fps: fps) {
            let size = frameSize(frame.time)
            let outcome = analytics.update(frame.detections, time: frame.time, width: size.width, height: size.height)
            events += outcome.events
            for (i, id) in outcome.trackIDs.enumerated() {
                guard let id else { continue }
                if let object = frame.truth[i] { ids[object, default: []].insert(id) } else { falseTracks += 1 }
            }
        }
        events += analytics.finish()
        return (events, ids, falseTracks)
    }
}

/// A small deterministic generator (the same scene every run).
struct Random {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func unit() -> Double {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return Double(state >> 11) / Double(1 << 53)
    }
}

extension AnalyticsEvent {
    /// The event's data as a dictionary (as a consumer of the line reads it).
    var fields: [String: Any] {
        var line = JSONObject()
        line.set("data", object: data)
        let bytes = line.line().bytes
        let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        return object?["data"] as? [String: Any] ?? [:]
    }
}
