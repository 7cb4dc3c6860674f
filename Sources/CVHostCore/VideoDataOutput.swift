import Dispatch

/// Receives frames from a video data output. All calls for one output come from that output's
/// worker thread(s): with one worker, strictly one at a time and in frame order.
public protocol VideoDataOutputDelegate: AnyObject, Sendable {
    /// A frame, already in the pixel format chosen for this output. Both are borrowed for the
    /// duration of the call in the sense that the consumer must not write to the pixels.
    func videoDataOutput(_ output: VideoDataOutput, didOutput sample: SampleBuffer, pixelBuffer: PixelBuffer,
                         context: DeliveryContext)
    /// A frame that will not be delivered. Called on the capture thread; keep it short.
    func videoDataOutput(_ output: VideoDataOutput, didDrop sample: SampleBuffer, reason: DropReason)
    /// The last frame was delivered to this worker; called on the worker's thread before it ends.
    func videoDataOutputDidFinish(_ output: VideoDataOutput, worker: Int)
}

/// Counters of one output, read at any time.
public struct DeliveryStatistics: Sendable {
    /// Frames that reached the output's connection while it was enabled.
    public var offered: UInt64 = 0
    /// Frames handed to the delegate.
    public var delivered: UInt64 = 0
    public var dropped: [DropReason: UInt64] = [:]
    /// Frames waiting now, and the most that ever waited.
    public var queueDepth = 0
    public var maxQueueDepth = 0
    /// The policy in force since the output last started (nil before it ever ran).
    public var policy: BackpressurePolicy?

    public var droppedTotal: UInt64 { dropped.values.reduce(0, +) }
}

/// An output that hands frames to a delegate on its own serial queue
/// (AVCaptureVideoDataOutput). Configure it before adding it to a session.
public final class VideoDataOutput: @unchecked Sendable {
    // @unchecked Sendable: configuration fields are set before the output runs (the session
    // refuses changes while it is running); run-time state is behind `counters` and `queue`.

    /// A name for logs and thread names.
    public let label: String
    /// Pixel formats the delegate accepts, most preferred first; empty takes the source's own.
    /// A source format in the list is passed as it is; gray8 is read from the luma plane of any
    /// luma-first format; otherwise the frame is converted to the first format, once per frame
    /// however many outputs ask for it.
    public var acceptedPixelFormats: [PixelFormat] = []
    /// Frames at a size of the consumer's choosing, scaled and converted in one pass off the
    /// capture thread (videoSettings' width and height); nil: the source's size.
    public var scaling: FrameScaling?
    /// With `scaling`: the delegate also reads each frame at its captured size, in the same format
    /// (`fullPixels(for:)`), made off the capture thread as the scaled one is.
    public var deliversFullFrame = false
    /// With `motionGate`: the delegate reads each frame's motion regions (`regions(for:)`, squares
    /// of `scaling`'s larger side), and the frame at its captured size with them.
    public var deliversRegions = false
    /// nil: the source decides (drop-late for live sources, block for files and images).
    public var backpressure: BackpressurePolicy?
    /// How many frames may wait for the delegate.
    public var maxQueuedFrames = 2
    /// How many worker threads call the delegate (1: serial; more only for consumers that
    /// keep no state between frames).
    public var workerCount = 1
    /// What the consumer would like the device to do (merged over all outputs at start).
    public var captureHints = CaptureHints()
    /// Frames offered only while they move (a plugin's `on_motion=true`); nil: every frame.
    public var motionGate: MotionGate?
    /// The media time of the last frame the gate let through (`refresh` counts from it).
    private let gateLastNs = Locked<Int64?>(nil)
    /// The output's connection to the session's video.
    public let connection = CaptureConnection()

    public private(set) weak var delegate: VideoDataOutputDelegate?
    private let counters = Locked(DeliveryStatistics())
    private let queue = Locked<DeliveryQueue?>(nil)

    public init(label: String) {
        self.label = label
    }

    /// Sets the receiver of frames (AVCaptureVideoDataOutput.setSampleBufferDelegate).
    public func setSampleBufferDelegate(_ delegate: VideoDataOutputDelegate) {
        self.delegate = delegate
    }

    /// The policy in force when running on a source that is (or is not) live.
    public func effectiveBackpressure(liveSource: Bool) -> BackpressurePolicy {
        backpressure ?? (liveSource ? .dropLate : .block)
    }

    /// Where the picture lies in a delivered frame made from a source frame of `width` x `height`
    /// (before it is turned), and the size of the picture it was made from: the frame itself
    /// without `scaling`.
    public func content(sourceWidth width: Int, sourceHeight height: Int, format: PixelFormat)
        -> (content: FrameScaling.Content, sourceWidth: Int, sourceHeight: Int) {
        let turned = connection.videoOrientation.swapsSides ? (height, width) : (width, height)
        guard let scaling else { return (.init(x: 0, y: 0, width: turned.0, height: turned.1), turned.0, turned.1) }
        return (scaling.content(sourceWidth: turned.0, sourceHeight: turned.1, evenOffsets: deliveredFormat(for: format).halvesChroma),
                turned.0, turned.1)
    }

    /// The format this output's delegate receives for frames in `source` format.
    public func deliveredFormat(for source: PixelFormat) -> PixelFormat {
        if acceptedPixelFormats.isEmpty || acceptedPixelFormats.contains(source) { return source }
        if acceptedPixelFormats.contains(.gray8) && source.firstPlaneIsLuma { return .gray8 }
        return acceptedPixelFormats[0]
    }

    public var statistics: DeliveryStatistics {
        var s = counters.withLock { $0 }
        queue.withLock { q in
            s.queueDepth = q?.depth ?? 0
            s.maxQueueDepth = max(s.maxQueueDepth, q?.maxDepth ?? 0)
        }
        return s
    }

    // MARK: - Driven by the session

    func start(liveSource: Bool) {
        let policy = effectiveBackpressure(liveSource: liveSource)
        counters.withLock { $0.policy = policy }
        // The handlers hold the output: the cycle (output -> queue -> handlers) ends in finish(),
        // which the session calls at every stop. (Weak captures would do as well, but a weak
        // reference's side table is pointed to only by tagged refcount bits, which LeakSanitizer
        // cannot follow: it reported each as leaked.)
        let q = DeliveryQueue(
            label: "cvhost.output.\(label)", capacity: maxQueuedFrames, policy: policy, workerCount: workerCount,
            handler: { [self] sample, context in deliver(sample, context: context) },
            onDrop: { [self] sample, reason in drop(sample, reason: reason) },
            onFinish: { [self] worker in delegate?.videoDataOutputDidFinish(self, worker: worker) })
        queue.withLock { $0 = q }
        q.start()
    }

    /// Offers a frame from the capture thread.
    func offer(_ sample: SampleBuffer) {
        guard connection.isEnabled else { return }
        counters.withLock { $0.offered += 1 }
        if let gate = motionGate, let motion = sample.motion, !lets(sample, through: gate, motion) {
            drop(sample, reason: .noMotion)
            return
        }
        guard connection.admit(presentationTimeNs: sample.presentationTimeNs) else {
            drop(sample, reason: .frameRateCap)
            return
        }
        guard let q = queue.withLock({ $0 }) else { return }
        // The frame's conversion (or scaling) is begun now, on another thread, so that it is made
        // while the delegate still works on the frame before: the delivery thread then finds it
        // made (or waits for it: a buffer's conversions are made once, under its lock). Only for
        // a frame that will be delivered: every frame when frames wait for the delegate (block), and
        // otherwise one that finds no other waiting (a late one may yet be dropped for a newer).
        if needsMaking(sample.pixelBuffer), q.policy == .block || q.depth == 0 {
            DispatchQueue.global(qos: .userInitiated).async { [self] in
                _ = pixels(for: sample)
                _ = fullPixels(for: sample)
            }
        }
        q.enqueue(sample)
    }

    /// Whether a frame with `motion` passes `gate`: it moves, or `refresh` passed since the last let through.
    private func lets(_ sample: SampleBuffer, through gate: MotionGate, _ motion: FrameMotion) -> Bool {
        gateLastNs.withLock { last in
            let due = gate.refresh.map { r in last.map { sample.presentationTimeNs - $0 >= Int64(r * 1e9) } ?? true } ?? false
            guard motion.active || due else { return false }
            last = sample.presentationTimeNs
            return true
        }
    }

    /// Whether the delegate's pixels are made from the frame's (converted, turned, scaled) rather
    /// than the frame's own or its luma plane.
    private func needsMaking(_ pixels: PixelBuffer) -> Bool {
        scaling != nil || !connection.videoOrientation.isIdentity || !pixels.format.readsAs(deliveredFormat(for: pixels.format))
    }

    /// The pixels the delegate receives for `sample`: its own, or converted (turned, scaled) and cached on its buffer.
    /// The frame as this output delivers it (its format, turned and scaled as it is set), for a
    /// frame that reaches its delegate another way (the live view's picture of a plugin's frame).
    public func pixels(for sample: SampleBuffer) -> PixelBuffer {
        let target = deliveredFormat(for: sample.pixelBuffer.format)
        return scaling.map { sample.pixelBuffer.scaled($0, to: target, orientation: connection.videoOrientation) }
            ?? sample.pixelBuffer.converted(to: target, orientation: connection.videoOrientation)
    }

    /// The frame at its captured size (turned) in the delegate's format, when the output scales
    /// frames and delivers the full one too; made once and cached on the frame's buffer.
    public func fullPixels(for sample: SampleBuffer) -> PixelBuffer? {
        guard scaling != nil, deliversFullFrame || !regions(for: sample).isEmpty else { return nil }
        return sample.pixelBuffer.converted(to: deliveredFormat(for: sample.pixelBuffer.format), orientation: connection.videoOrientation)
    }

    /// Where the frame moved, as squares of `scaling`'s larger side in the captured picture (turned),
    /// for a delegate gated on motion that reads regions (`deliversRegions`); empty: the whole frame.
    public func regions(for sample: SampleBuffer) -> [FrameMotion.Region] {
        guard deliversRegions, motionGate != nil, let motion = sample.motion, motion.active else { return [] }
        let o = connection.videoOrientation, w = sample.pixelBuffer.width, h = sample.pixelBuffer.height
        let (width, height) = o.swapsSides ? (h, w) : (w, h)
        return motion.turned(o, width: w, height: h).squares(side: scaling.map { max($0.width, $0.height) } ?? 0, width: width, height: height)
    }

    /// Drains and stops the workers; returns when the delegate has seen its last frame.
    func finish() {
        guard let q = queue.withLock({ $0 }) else { return }
        q.finish()
        counters.withLock { $0.maxQueueDepth = max($0.maxQueueDepth, q.maxDepth) }
        queue.withLock { $0 = nil }
    }

    private func deliver(_ sample: SampleBuffer, context: DeliveryContext) {
        counters.withLock { $0.delivered += 1 }
        guard let delegate else { return }
        // Converted (and turned, and scaled) off the capture thread, so that never slows it: begun
        // when the frame was offered, else made here.
        delegate.videoDataOutput(self, didOutput: sample, pixelBuffer: pixels(for: sample), context: context)
    }

    /// Counts a frame the delegate was handed but could not take (its consumer restarting, or
    /// given up on): it is then both delivered and dropped.
    public func countDrop(_ reason: DropReason) {
        counters.withLock { $0.dropped[reason, default: 0] += 1 }
    }

    private func drop(_ sample: SampleBuffer, reason: DropReason) {
        counters.withLock { $0.dropped[reason, default: 0] += 1 }
        delegate?.videoDataOutput(self, didDrop: sample, reason: reason)
    }
}
