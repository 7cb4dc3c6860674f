import CVHostCore

/// A frame of an input as the rooms after a plugin see it: its place in time, its size, and the
/// frame itself (the host's own copy of the picture as captured, whether the plugin ran in
/// cvhost's process, in a worker or in Python).
public struct ProcessedFrame: Sendable {
    public let sequence: UInt64
    public let captureTimeNs: Int64
    public let presentationTimeNs: Int64
    /// The picture as captured (and turned): what results' bounds are in.
    public let width: Int
    public let height: Int
    /// The frame as captured: nil for one passed over whose picture no room asked to keep.
    public let sample: SampleBuffer?
    /// How the plugin's frames are turned (its `mirror` and `rotate`): results' boxes are in the
    /// turned picture.
    public let orientation: VideoOrientation
    /// What moved in it (`--motion`), in the turned picture's pixels; nil when motion is not looked for.
    public let motion: FrameMotion?

    public init(_ sample: SampleBuffer, width: Int, height: Int, orientation: VideoOrientation = .identity, keepPicture: Bool = true) {
        sequence = sample.sequence
        motion = sample.motion?.turned(orientation, width: sample.pixelBuffer.width, height: sample.pixelBuffer.height)
        captureTimeNs = sample.captureTimeNs
        presentationTimeNs = sample.presentationTimeNs
        self.width = width
        self.height = height
        self.orientation = orientation
        self.sample = keepPicture ? sample : nil
    }

    /// The picture as the plugin saw it (turned as it was; the size its results' boxes are in), in
    /// `format`: made when asked for (once a frame, cached on its buffer), nil without the picture.
    public func picture(in format: PixelFormat) -> PixelBuffer? {
        sample.map { $0.pixelBuffer.converted(to: format, orientation: orientation) }
    }

    /// The same frame without its picture (the memory it holds let go).
    public var withoutPicture: ProcessedFrame {
        ProcessedFrame(sequence: sequence, captureTimeNs: captureTimeNs, presentationTimeNs: presentationTimeNs, width: width, height: height,
                       orientation: orientation, motion: motion)
    }

    private init(sequence: UInt64, captureTimeNs: Int64, presentationTimeNs: Int64, width: Int, height: Int, orientation: VideoOrientation,
                 motion: FrameMotion?) {
        self.motion = motion
        self.sequence = sequence
        self.captureTimeNs = captureTimeNs
        self.presentationTimeNs = presentationTimeNs
        self.width = width
        self.height = height
        self.orientation = orientation
        sample = nil
    }
}

/// One frame a plugin processed and all that came of it, in frame order after its instances'
/// results were put back in order: the one value the rooms after a plugin are handed (the
/// analytics add their events to its lines, the evidence its snapshots' paths, the live view shows
/// its picture), so that a result never has to be matched to its frame again.
public struct FrameResults: Sendable {
    /// The frame the plugin processed.
    public let frame: ProcessedFrame
    /// The frames of the input passed over since the previous one processed (the plugin's
    /// `max_fps`), oldest first: the analytics place the tracks in them, and their events are
    /// theirs. At most `mostPassedOver`, the newest (a plugin far behind has more).
    public let passedOver: [ProcessedFrame]
    /// The most frames passed over one frame's results carry (a second at 120 fps and more).
    public static let mostPassedOver = 256
    /// The lines to write, in order: the plugin's results, and what the stages add to them.
    public var lines: [OutputLine]
    /// The plugin processed it without failing.
    public let succeeded: Bool

    public init(frame: ProcessedFrame, passedOver: [ProcessedFrame] = [], lines: [OutputLine], succeeded: Bool = true) {
        self.frame = frame
        self.passedOver = passedOver
        self.lines = lines
        self.succeeded = succeeded
    }

    /// The frame of that sequence number among these (the processed one or one passed over).
    public func frame(sequence: UInt64) -> ProcessedFrame? {
        sequence == frame.sequence ? frame : passedOver.last { $0.sequence == sequence }
    }

    /// Of this frame and those passed over, the one with its picture kept whose seq is nearest
    /// `sequence` (the later on a tie): what an event's snapshot is of when its own frame's picture
    /// was not kept.
    public func nearestWithPicture(to sequence: UInt64) -> ProcessedFrame? {
        ([frame] + passedOver).filter { $0.sample != nil }.min { a, b in
            let da = a.sequence > sequence ? a.sequence - sequence : sequence - a.sequence
            let db = b.sequence > sequence ? b.sequence - sequence : sequence - b.sequence
            return da != db ? da < db : a.sequence > b.sequence
        }
    }
}

/// A room that is handed each frame's results after a plugin (a runner's stages, in the order
/// they were added: the analytics, the evidence, the live view). Called one frame at a time per
/// runner, in frame order, on the plugin's delivery threads: it must not wait for long.
public protocol FrameStage: AnyObject, Sendable {
    /// One frame's results: the stage may add lines or change them.
    func frame(_ results: inout FrameResults)
    /// After the input's last frame: the lines that close what is still open (the stages before
    /// this one made them; it may add more or change them), after the last frame processed.
    func finish(_ lines: inout [OutputLine], last: ProcessedFrame?)
    /// Whether it needs the pictures of frames passed over (a snapshot of an event between two
    /// frames processed), and of the last frame processed when the input closes; without, they
    /// carry their time alone.
    var needsPassedOverPictures: Bool { get }
}

extension FrameStage {
    public func finish(_ lines: inout [OutputLine], last: ProcessedFrame?) {}
    public var needsPassedOverPictures: Bool { false }
}
