/// The time an input's analytics count in (what `lost`, `dwell` and every event's seconds
/// measure): the frames' media time, kept monotonic whatever the source's timestamps do. A camera
/// that reconnects restarts its timestamps at 0; some stamp a frame seconds back now and then. A
/// step of the timestamps backwards, or (for a live source) forward by much more than the time that
/// passed on this host, is a jump: the clock goes on from where it was by what passed on this host
/// (live) or by one usual frame interval (a file, whose media time is its own), and the jump is
/// counted. So a track spans no outage it did not live through, and no duration is ever negative.
public struct AnalyticsClock: Sendable {
    /// A live source (a camera, a network stream): arrival on this host is the truth of elapsed time.
    let live: Bool
    private var last: (ptsNs: Int64, wallNs: Int64, time: Double)?
    /// The last positive steps of the timestamps, seconds (their median is the usual frame interval).
    private var steps: [Double] = []
    /// Jumps of the timestamps so far.
    public private(set) var jumps = 0

    public init(live: Bool) {
        self.live = live
    }

    /// The usual frame interval, seconds (1/30 until some are seen): the lower median of the last steps.
    var interval: Double {
        guard !steps.isEmpty else { return 1.0 / 30 }
        return steps.sorted()[(steps.count - 1) / 2]
    }

    /// The time of a frame with media time `ptsNs` that arrived at `wallNs` (ns since the epoch),
    /// seconds; and, when its timestamp jumped, the media times it jumped from and to (ns).
    public mutating func time(ptsNs: Int64, wallNs: Int64) -> (time: Double, jump: (fromNs: Int64, toNs: Int64)?) {
        guard let last else {
            let t = max(0, Double(ptsNs) / 1e9)
            self.last = (ptsNs, wallNs, t)
            return (t, nil)
        }
        // Differences first in Int64 with overflow checked: a timestamp may be anything.
        let (dp, pOverflow) = ptsNs.subtractingReportingOverflow(last.ptsNs)
        let (dw, wOverflow) = wallNs.subtractingReportingOverflow(last.wallNs)
        let step = pOverflow ? -Double.infinity : Double(dp) / 1e9
        let passed = wOverflow ? 0 : max(0, Double(dw) / 1e9)
        let normal = step >= 0 && (!live || step <= max(10 * interval, 1) || step <= passed + 1)
        let time: Double
        var jump: (fromNs: Int64, toNs: Int64)?
        if normal {
            time = last.time + step
            if step > 0 {
                steps.append(step)
                if steps.count > 15 { steps.removeFirst() }
            }
        } else {
            jumps += 1
            jump = (last.ptsNs, ptsNs)
            time = last.time + (live ? max(interval, passed) : interval)
        }
        self.last = (ptsNs, wallNs, time)
        return (time, jump)
    }
}
