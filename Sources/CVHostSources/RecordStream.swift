import CFFmpeg
import CVHostCore
import Glibc
import Synchronization

/// A camera's second stream, read for its clips alone (`--input door=rtsp://cam/sub,record=rtsp://cam/main`):
/// plugins, motion and the live view take the first (the sub-stream, small and cheap to decode);
/// the clips are this one's packets as they are (the main stream, never decoded here), as Frigate
/// gives a camera a `detect` and a `record` stream.
///
/// Its packets are handed to `observer` (the input's ClipRecorder) with their media time moved
/// onto the first stream's by the wall clock: each stream's offset is the least of (wall time a
/// packet was read - its media time), what a packet that came with no delay shows, and a record
/// packet's time is its own plus its stream's offset less the first stream's (`DetectClock`). So
/// an event at the first stream's time t is recorded from the second's packets read around the
/// same moment, whatever either stream's clock started at.
///
/// Read on a thread of its own, connected again after a loss (1 s, doubling to 10 s) until stopped.
public final class RecordStream: @unchecked Sendable {
    // @unchecked Sendable: `ended` is guarded by `state`; the rest is immutable or atomic.
    /// The first stream's packets seen only for their times: set as the input's packet observer.
    public final class DetectClock: EncodedPacketObserver {
        private let offset = Mutex<Int64?>(nil)

        public init() {}

        public func encodedPacket(_ packet: EncodedPacket) {
            let o = packet.readWallNs.subtractingClamped(packet.ptsNs)
            offset.withLock { $0 = min($0 ?? o, o) }
        }

        /// A new connection starts its times anew.
        public func encodedStreamEnded() { offset.withLock { $0 = nil } }

        /// Wall time less media time of the first stream; nil before its first packet.
        var wallMinusMedia: Int64? { offset.withLock { $0 } }
    }

    private let location: StreamLocation
    private let observer: EncodedPacketObserver
    private let clock: DetectClock
    private let interrupt = InterruptDeadline()
    private let stopped = Atomic(false)
    /// Its thread was started, and is done; broadcast on `state` (as is a stop, which cuts a backoff's wait short).
    private var started = false, ended = false
    private let state = ConditionLock()
    /// Seconds an open or a packet's read may take before the connection is taken for lost.
    static let openTimeout = 10.0, stallSeconds = 10.0

    /// What messages call it (its password hidden).
    public var display: String { location.display }

    /// nil when `url` is not a network stream.
    public init?(url: String, observer: EncodedPacketObserver, clock: DetectClock) {
        guard let location = StreamLocation(url), location.scheme != nil else { return nil }
        self.location = location
        self.observer = observer
        self.clock = clock
    }

    /// Starts reading on a thread of its own (once: again does nothing; after stop(), nothing).
    public func start(logSource: String?) {
        let first = state.withLock {
            guard !started, !stopped.load(ordering: .relaxed) else { return false }
            started = true
            return true
        }
        guard first else { return }
        SystemThread.start("cvhost.record") { [self] in
            var backoff = 1.0, said = false
            while !stopped.load(ordering: .relaxed) {
                var delivered = false
                do {
                    try read(delivered: &delivered)
                } catch {
                    if !stopped.load(ordering: .relaxed), !said {
                        // Said once: a camera whose main stream is away says so every few seconds otherwise.
                        Log.warning("record=\(location.display): \(error); its clips and snapshots wait for it (tried again every "
                                    + "\(Int(backoff)) s up to 10 s)", source: logSource)
                        said = true
                    }
                }
                // A connection that delivered starts the backoff anew.
                if delivered { backoff = 1 }
                observer.encodedStreamEnded()
                // The backoff, cut short by a stop.
                let until = HostClock.monotonicNs() + UInt64(backoff * 1e9)
                state.withLock {
                    while !stopped.load(ordering: .relaxed), state.wait(untilMonotonicNs: until) {}
                }
                backoff = min(backoff * 2, 10)
            }
            state.withLock {
                ended = true
                state.broadcast()
            }
        }
    }

    /// Stops reading (a blocked read gives up at once) and returns once its thread is done.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        interrupt.cancel()
        state.withLock {
            state.broadcast()
            while started && !ended { state.wait() }
        }
    }

    /// One connection: opened, then its video packets handed on (`delivered`) until it ends (an
    /// error) or is stopped (a return).
    private func read(delivered: inout Bool) throws {
        guard var ctx = avformat_alloc_context() else { throw CaptureError(.inputUnavailable, "out of memory") }
        ctx.pointee.interrupt_callback = interrupt.callback
        interrupt.arm(seconds: Self.openTimeout)
        var options: OpaquePointer?
        if location.scheme?.hasPrefix("rtsp") == true { av_dict_set(&options, "rtsp_transport", "tcp", 0) }
        var opened: UnsafeMutablePointer<AVFormatContext>? = ctx
        var ret = avformat_open_input(&opened, location.url, nil, &options)
        av_dict_free(&options)
        guard ret >= 0, let done = opened else {
            interrupt.disarm()
            throw CaptureError(.inputUnavailable, "cannot open it: \(MediaDecoder.describe(ret, interrupt: interrupt, timeout: Self.openTimeout))")
        }
        ctx = done
        var format: UnsafeMutablePointer<AVFormatContext>? = ctx
        defer { avformat_close_input(&format) }
        ret = avformat_find_stream_info(ctx, nil)
        interrupt.disarm()
        guard ret >= 0 else { throw CaptureError(.unsupportedInput, "cannot read it: \(ffmpegError(ret))") }
        let index = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard index >= 0, let stream = ctx.pointee.streams[Int(index)],
              let streamFormat = EncodedStreamFormat(copying: stream.pointee.codecpar, timeBase: stream.pointee.time_base, decodeTimesKnown: false)
        else { throw CaptureError(.unsupportedInput, "it has no video stream") }
        let timeBase = stream.pointee.time_base
        var first: Int64?, recordOffset: Int64?
        guard let packet = av_packet_alloc() else { throw CaptureError(.inputUnavailable, "out of memory") }
        var owned: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&owned) }
        while !stopped.load(ordering: .relaxed) {
            interrupt.arm(seconds: Self.stallSeconds)
            ret = av_read_frame(ctx, packet)
            interrupt.disarm()
            guard ret >= 0 else {
                if stopped.load(ordering: .relaxed) { return }
                throw CaptureError(.inputUnavailable, ret == CFFmpeg_AVERROR_EOF ? "the stream ended"
                                   : MediaDecoder.describe(ret, interrupt: interrupt, timeout: Self.stallSeconds))
            }
            defer { av_packet_unref(packet) }
            let ts = packet.pointee.pts != Int64.min ? packet.pointee.pts : packet.pointee.dts
            guard packet.pointee.stream_index == index, ts != Int64.min else { continue }
            let start = first ?? ts
            first = start
            let media = av_rescale_q(ts.subtractingClamped(start), timeBase, AVRational(num: 1, den: 1_000_000_000))
            let o = HostClock.wallNs().subtractingClamped(media)
            recordOffset = min(recordOffset ?? o, o)
            // Before the first stream's first packet there is no time to put it at: not recorded.
            guard let detect = clock.wallMinusMedia, let recordOffset else { continue }
            let moved = media.addingClamped(recordOffset.subtractingClamped(detect))
            if let p = EncodedPacket(referencing: packet, ptsNs: moved, format: streamFormat) {
                observer.encodedPacket(p)
                delivered = true
            }
        }
    }
}
