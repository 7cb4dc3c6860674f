import CVHostCore
import CVHostLines
import NIOCore

/// One encoded picture of the live view, and the frame it shows.
public struct PreviewPicture: Sendable {
    public let jpeg: [UInt8]
    /// The frame's sequence (as in the JSON lines' `seq`) and size before scaling (what the
    /// results' pixel coordinates refer to).
    public let sequence: UInt64
    /// The frame's media time from the start of the input, in nanoseconds (the lines' `pts`).
    public let presentationTimeNs: Int64
    public let frameWidth: Int
    public let frameHeight: Int
    public let width: Int
    public let height: Int
    /// Where the frame moved (`--motion`), in its pixels; nil when motion is not looked for.
    public var motion: [FrameMotion.Region]? = nil

    /// Headers that tie the picture to its results: X-Sequence, X-Pts and the frame's own size; and
    /// X-Motion, its motion boxes (`x,y,w,h` joined by `;`, empty when still), when motion is looked for.
    var headers: [(String, String)] {
        [("Content-Type", "image/jpeg"), ("Content-Length", String(jpeg.count)), ("X-Sequence", String(sequence)),
         ("X-Pts", String(Double(presentationTimeNs) / 1e9)), ("X-Frame-Width", String(frameWidth)), ("X-Frame-Height", String(frameHeight))]
            + (motion.map { [("X-Motion", $0.map { "\($0.x),\($0.y),\($0.width),\($0.height)" }.joined(separator: ";"))] } ?? [])
    }
}

/// The live picture of one input, for `/stream.mjpg` and `/snapshot.jpg`: a video data output of
/// the input's session like a plugin's, that never holds the capture back (drop-late, one frame
/// waiting) and encodes JPEG on its own thread only while someone watches, at most `maxFPS`
/// times a second (wall clock), at most `maxWidth` pixels wide.
///
/// The stream's pictures are frames the drawn plugin processed (its runner hands them on: a FrameStage), so that the page
/// draws each frame's boxes over its own picture, not over a newer one the plugin never saw (a
/// detector at 5 frames a second on a 30 fps camera); while that plugin processes nothing for
/// `followSeconds` (paused, or slower than that), the newest frame is shown instead.
public final class LivePreview: VideoDataOutputDelegate, FrameStage, @unchecked Sendable {
    // @unchecked Sendable: the mutable state is behind Locked values; the encoder is used under its lock.
    public struct Settings: Sendable {
        public var maxFPS: Double
        public var maxWidth: Int

        public init(maxFPS: Double = 5, maxWidth: Int = 640) {
            self.maxFPS = maxFPS
            self.maxWidth = maxWidth
        }
    }

    public let source: String
    public let output: VideoDataOutput
    private let settings: Settings
    private let viewers = StreamingClients()
    private let encoder = Locked(JPEGEncoderBox())

    private struct State {
        /// The newest frame: encoded when a snapshot is asked for. Dropped at the end of the input,
        /// when its picture is encoded once (a camera's buffer is not held past the session).
        var latest: (sample: SampleBuffer, pixels: PixelBuffer)?
        var lastPicture: PreviewPicture?
        var lastEncodeNs: UInt64 = 0
        var encoded: UInt64 = 0
        /// The newest frame the drawn plugin processed, not yet shown (held only while someone
        /// watches), and when it came (monotonic).
        var processed: SampleBuffer?
        var processedAtNs: UInt64?
    }
    private let state = Locked(State())

    public init(source: String, settings: Settings) {
        self.source = source
        self.settings = settings
        output = VideoDataOutput(label: "live view")
        output.backpressure = .dropLate
        output.maxQueuedFrames = 1
        output.setSampleBufferDelegate(self)
    }

    /// How long the stream waits for the drawn plugin's next frame before it shows the newest frame.
    static let followSeconds = 1.0

    /// A frame the drawn plugin has processed, with its results on their way: the stream's next
    /// picture. Called on the plugin's delivery threads: it only keeps the frame (the camera's
    /// buffer, for as long as the next picture is due), and only while someone watches.
    public func frame(_ results: inout FrameResults) {
        guard results.succeeded, let sample = results.frame.sample else { return }
        processed(sample)
    }

    func processed(_ sample: SampleBuffer) {
        guard viewers.count > 0 else { return }
        state.withLock { s in
            if (s.processed?.sequence ?? 0) <= sample.sequence { s.processed = sample }
            s.processedAtNs = HostClock.monotonicNs()
        }
    }

    /// Pictures encoded so far (for the benchmark and the tests: none while nobody watches).
    public var encodedCount: UInt64 { state.withLock { $0.encoded } }
    public var viewerCount: Int { viewers.count }

    /// Adds an MJPEG viewer whose response head is written; it gets the latest picture at once.
    func addViewer(_ channel: Channel) {
        let client = StreamingClient(channel: channel, whenFull: .skip)
        if let p = state.withLock({ $0.lastPicture }) { client.send(Self.part(p, allocator: channel.allocator)) }
        viewers.add(client)
    }

    func closeViewers() { viewers.closeAll() }

    /// The newest picture, encoded now unless it is already (blocks: call it off the event loop).
    /// nil before the first frame.
    func snapshot() -> PreviewPicture? {
        let (latest, last) = state.withLock { ($0.latest, $0.lastPicture) }
        guard let latest else { return last }
        if let last, last.sequence == latest.sample.sequence { return last }
        return encode(latest.pixels, latest.sample)
    }

    // MARK: - VideoDataOutputDelegate (the output's worker thread)

    public func videoDataOutput(_ output: VideoDataOutput, didOutput sample: SampleBuffer, pixelBuffer: PixelBuffer,
                                context: DeliveryContext) {
        let now = HostClock.monotonicNs()
        // The frame to show, with its pixels when they are at hand (a plugin's frame is converted below, out of the lock).
        let shown = state.withLock { s -> (SampleBuffer, PixelBuffer?)? in
            s.latest = (sample, pixelBuffer)
            // 10% early is on time: frames come on the source's beat, so a strict cap would wait a whole frame more.
            guard viewers.count > 0 && Double(now - s.lastEncodeNs) >= 0.9e9 / settings.maxFPS else { return nil }
            if let p = s.processed {
                s.processed = nil
                if p.sequence > s.lastPicture?.sequence ?? 0 { return (p, nil) }
            }
            // The drawn plugin is at work: wait for its next frame rather than show one it will not draw on.
            if let at = s.processedAtNs, Double(now - at) < Self.followSeconds * 1e9 { return nil }
            return (sample, pixelBuffer)
        }
        guard let (shownSample, pixels) = shown, let picture = encode(pixels ?? output.pixels(for: shownSample), shownSample) else { return }
        viewers.send(Self.part(picture, allocator: ByteBufferAllocator()))
        if FrameTrace.enabled {
            FrameTrace.mark(ptsNs: shownSample.presentationTimeNs, "preview_start", atNs: now)
            FrameTrace.mark(ptsNs: shownSample.presentationTimeNs, "preview_sent")
        }
    }

    public func videoDataOutput(_ output: VideoDataOutput, didDrop sample: SampleBuffer, reason: DropReason) {}

    public func videoDataOutputDidFinish(_ output: VideoDataOutput, worker: Int) {
        // The input ended: its last picture stays (for a page opened after the end), its frame does not.
        let unencoded = state.withLock { s in s.latest.flatMap { $0.sample.sequence == s.lastPicture?.sequence ? nil : $0 } }
        if let last = unencoded { _ = encode(last.pixels, last.sample) }
        state.withLock { s in
            s.latest = nil
            s.processed = nil
        }
    }

    private func encode(_ pixels: PixelBuffer, _ sample: SampleBuffer) -> PreviewPicture? {
        let jpeg: [UInt8]
        do {
            jpeg = try encoder.withLock { try $0.encoder.encode(pixels, maxWidth: settings.maxWidth) }
        } catch {
            Log.warning("live view: \(error)", source: source)
            return nil
        }
        let size = JPEGEncoder.outputSize(width: pixels.width, height: pixels.height, maxWidth: settings.maxWidth)
        var picture = PreviewPicture(jpeg: jpeg, sequence: sample.sequence, presentationTimeNs: sample.presentationTimeNs, frameWidth: pixels.width, frameHeight: pixels.height,
                                     width: size.width, height: size.height)
        picture.motion = sample.motion.map { $0.active ? $0.regions : [] }
        state.withLock { s in
            s.lastEncodeNs = HostClock.monotonicNs()
            s.encoded += 1
            if (s.lastPicture?.sequence ?? 0) <= picture.sequence { s.lastPicture = picture }
        }
        return picture
    }

    /// The boundary between the parts of /stream.mjpg.
    static let boundary = "cvhost-frame"

    /// One part of the multipart stream: boundary, headers, the JPEG.
    static func part(_ p: PreviewPicture, allocator: ByteBufferAllocator) -> ByteBuffer {
        var b = allocator.buffer(capacity: p.jpeg.count + 200)
        b.writeString("--\(boundary)\r\n")
        for (name, value) in p.headers { b.writeString("\(name): \(value)\r\n") }
        b.writeString("\r\n")
        b.writeBytes(p.jpeg)
        b.writeString("\r\n")
        return b
    }
}

/// The encoder behind a lock (Locked wants its value's type to be a value it can hold).
private struct JPEGEncoderBox: @unchecked Sendable {
    // @unchecked Sendable: used only under LivePreview's lock.
    let encoder = JPEGEncoder()
}
