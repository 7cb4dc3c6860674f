/// How a connection turns the picture before its output sees it (AVCaptureConnection's
/// isVideoMirrored and videoRotationAngle): first mirrored left to right, then rotated
/// clockwise. Plugins see the turned picture, so their coordinates are in its pixels.
public struct VideoOrientation: Hashable, Sendable, CustomStringConvertible {
    /// Flipped left to right (a selfie view).
    public var isMirrored: Bool
    /// Clockwise rotation in degrees: 0, 90, 180 or 270.
    public private(set) var rotationAngle: Int

    public static let identity = VideoOrientation(isMirrored: false, rotationAngle: 0)

    /// The angles a picture can be turned by without resampling it.
    public static let rotationAngles = [0, 90, 180, 270]

    public init(isMirrored: Bool, rotationAngle: Int) {
        precondition(VideoOrientation.rotationAngles.contains(rotationAngle), "rotation must be 0, 90, 180 or 270 degrees")
        self.isMirrored = isMirrored
        self.rotationAngle = rotationAngle
    }

    public var isIdentity: Bool { self == .identity }

    /// True when width and height trade places.
    public var swapsSides: Bool { rotationAngle == 90 || rotationAngle == 270 }

    public var description: String {
        isIdentity ? "upright" : ([isMirrored ? "mirrored" : nil, rotationAngle != 0 ? "rotated \(rotationAngle)°" : nil]
            .compactMap { $0 }.joined(separator: ", "))
    }
}
