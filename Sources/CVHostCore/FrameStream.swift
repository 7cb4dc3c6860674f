/// Frames from a running device. `next()` blocks until a frame is ready.
public protocol FrameStream: AnyObject, Sendable {
    /// The next frame; nil at the end of the input (files, images).
    /// - Throws: `CaptureInterruption` when frames stop for a while without the device failing
    ///   (the session reports it and calls `next()` again); `CaptureError` with `.streamFailed`
    ///   when reading fails for good.
    func next() throws -> CapturedFrame?
    /// Makes a blocked or later `next()` return nil soon. Called from another thread.
    func cancel()
    /// Releases the device. Called once, after the last `next()` returned.
    func close()
    /// The session's consumers now take at most `fps` frames a second (0: every frame): a stream
    /// that decodes may decode less; `keyframesWillDo`: none looks at every frame (no motion is
    /// looked for), so keyframes alone may do. Called from the capture thread, between `next()` calls.
    func need(framesPerSecond fps: Double, keyframesWillDo: Bool)
}

extension FrameStream {
    /// A camera's or a picture's frames cost the same taken or not.
    public func need(framesPerSecond fps: Double, keyframesWillDo: Bool) {}
}
