import CVHostCore
import Histogram

/// What one plugin did: frames processed and failed, results, and how long frames took,
/// as HdrHistograms (microseconds, 3 significant digits) since the start of the run.
final class PluginMetrics: Sendable {
    struct Snapshot: Sendable {
        var processed: UInt64 = 0
        var failed: UInt64 = 0
        var results: UInt64 = 0
        var processing = Histogram<UInt64>(highestTrackableValue: PluginMetrics.highestMicros, numberOfSignificantValueDigits: .three)
        var latency = Histogram<UInt64>(highestTrackableValue: PluginMetrics.highestMicros, numberOfSignificantValueDigits: .three)
        var firstProcessedNs: UInt64?
        var lastProcessedNs: UInt64?
        var lastSequence: UInt64?
    }

    /// One hour, in microseconds: anything longer is recorded as one hour.
    static let highestMicros: UInt64 = 3_600_000_000

    private let state = Locked(Snapshot())
    /// When the last report was made, and how many frames had been done then.
    private let lastReport = Locked<(ns: UInt64, done: UInt64)>((0, 0))

    /// Records one frame's call into the plugin.
    /// - Parameters:
    ///   - processingNs: time spent in process().
    ///   - latencyNs: from capture to the end of process().
    func record(sequence: UInt64, ok: Bool, processingNs: UInt64, latencyNs: UInt64, results: Int, endNs: UInt64) {
        state.withLock { s in
            if ok { s.processed += 1 } else { s.failed += 1 }
            s.results += UInt64(results)
            _ = s.processing.record(min(processingNs / 1000, PluginMetrics.highestMicros))
            _ = s.latency.record(min(latencyNs / 1000, PluginMetrics.highestMicros))
            if s.firstProcessedNs == nil { s.firstProcessedNs = endNs }
            s.lastProcessedNs = endNs
            s.lastSequence = max(s.lastSequence ?? 0, sequence)
        }
    }

    func addResults(_ n: Int) {
        state.withLock { $0.results += UInt64(n) }
    }

    var snapshot: Snapshot { state.withLock { $0 } }

    /// Frames per second done: over the whole run (`final`), or since the previous report.
    func fps(of m: Snapshot, final: Bool, now: UInt64) -> (fps: Double?, intervalSeconds: Double?) {
        let done = m.processed + m.failed
        return lastReport.withLock { last in
            defer { last = (now, done) }
            if final {
                guard let first = m.firstProcessedNs, let lastNs = m.lastProcessedNs, lastNs > first else { return (nil, nil) }
                let seconds = Double(lastNs - first) / 1e9
                return (Double(done - 1) / seconds, seconds)
            }
            let since = last.ns == 0 ? m.firstProcessedNs ?? now : last.ns
            guard now > since else { return (nil, nil) }
            let seconds = Double(now - since) / 1e9
            return (Double(done - last.done) / seconds, seconds)
        }
    }
}
