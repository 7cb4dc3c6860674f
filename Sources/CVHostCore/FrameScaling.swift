/// Frames at a size the consumer chose, made by the host before they reach it: the whole picture
/// scaled to fit and centred on a grey pad (`letterbox`, AVFoundation's
/// AVVideoScalingModeResizeAspect; what YOLO models are trained on), or scaled to fill, its shape
/// not kept (`stretch`, AVVideoScalingModeResize). Asked for as AVCaptureVideoDataOutput's
/// videoSettings width and height ask for it (VideoDataOutput.scaling).
public struct FrameScaling: Hashable, Sendable, CustomStringConvertible {
    public enum Mode: Hashable, Sendable {
        case stretch
        /// `pad`: the grey level (0-255) of what is not the picture.
        case letterbox(pad: UInt8)
    }

    public let width: Int
    public let height: Int
    public let mode: Mode

    /// Sizes a scaled frame may have, each side.
    public static let sides = 16...8192

    public init(width: Int, height: Int, mode: Mode) {
        self.width = width
        self.height = height
        self.mode = mode
    }

    public var description: String {
        switch mode {
        case .stretch: "\(width)x\(height) stretched"
        case .letterbox(let pad): "\(width)x\(height) letterboxed on \(pad)"
        }
    }

    /// Where a picture lies in a scaled frame: its offset and size in the frame's pixels.
    public struct Content: Equatable, Sendable {
        public let x: Int
        public let y: Int
        public let width: Int
        public let height: Int

        /// The whole of a frame of that size: a frame that is not scaled.
        public static func whole(width: Int, height: Int) -> Content { Content(x: 0, y: 0, width: width, height: height) }
    }

    /// Where a source picture of `sourceWidth` x `sourceHeight` lies in the scaled frame.
    ///
    /// Letterbox: one gain for both sides (the smaller of the two ratios), the picture scaled to
    /// the gain's rounded size and centred with the odd pixel after: Ultralytics' LetterBox, step
    /// for step (Python's rounding, half to even), so that its scale_boxes undoes it exactly. A
    /// format whose chroma is halved (`evenOffsets`) has its offsets rounded down to even pixels.
    public func content(sourceWidth: Int, sourceHeight: Int, evenOffsets: Bool = false) -> Content {
        switch mode {
        case .stretch:
            return Content(x: 0, y: 0, width: width, height: height)
        case .letterbox:
            let gain = min(Double(width) / Double(sourceWidth), Double(height) / Double(sourceHeight))
            func round(_ v: Double) -> Int { Int(v.rounded(.toNearestOrEven)) }
            let w = min(width, max(1, round(Double(sourceWidth) * gain)))
            let h = min(height, max(1, round(Double(sourceHeight) * gain)))
            var x = round(Double(width - w) / 2 - 0.1), y = round(Double(height - h) / 2 - 0.1)
            if evenOffsets {
                x &= ~1
                y &= ~1
            }
            return Content(x: x, y: y, width: w, height: h)
        }
    }
}
