import Glibc

/// Where a frame's time goes, for a benchmark (benchmarks/rtsp_latency.py): with
/// CVHOST_FRAME_TRACE=1 in the environment, one line on stderr per frame and stage,
///
///     trace PTS_NS STAGE MONOTONIC_NS
///
/// keyed by the frame's presentation time (the `pts` of its result lines and the live view's
/// X-Pts, in ns), stamped on CLOCK_MONOTONIC, which every process of the machine shares (a camera
/// server's own stamps can be set beside them). Stages, in order: first_packet, last_packet (a live
/// RTSP stream's frame: its first and last packet arrived), to_decoder (handed to the decoder),
/// decoded; dequeued (a V4L2 camera's buffer taken from the driver); captured (the frame's capture
/// time: the driver's timestamp for a camera, decoding for a stream), offered (handed to the
/// plugins' and the live view's queues); process_start, process_end (each plugin); preview_start,
/// preview_sent (the live view's picture: its frame taken, its JPEG written to the viewers).
/// Without the variable nothing is written and a mark costs the test of a constant.
public enum FrameTrace {
    public static let enabled: Bool = getenv("CVHOST_FRAME_TRACE").map { String(cString: $0) == "1" } ?? false

    /// Notes that the frame with presentation time `ptsNs` reached `stage` at `atNs` (now by default).
    @inline(__always)
    public static func mark(ptsNs: Int64, _ stage: StaticString, atNs: UInt64? = nil) {
        guard enabled else { return }
        write(ptsNs, stage, atNs ?? HostClock.monotonicNs())
    }

    private static func write(_ ptsNs: Int64, _ stage: StaticString, _ atNs: UInt64) {
        let line = Array("trace \(ptsNs) \(stage) \(atNs)\n".utf8)
        _ = line.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }  // one write: lines never interleave
    }
}
