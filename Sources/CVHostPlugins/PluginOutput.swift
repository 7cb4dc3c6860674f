import CVHostCore

extension VideoDataOutput {
    /// The output that feeds one `--plugin`: the formats it accepts, what it would like from the
    /// camera, its workers (one per instance), its queue and its connection's frame-rate cap,
    /// mirroring and rotation.
    /// - Parameters: queueDepth, backpressure: the session-wide defaults, for options not given.
    convenience init(plugin: PluginInfo, configuration c: PluginConfiguration, label: String, queueDepth: Int,
                     backpressure: BackpressurePolicy?) {
        self.init(label: label)
        acceptedPixelFormats = plugin.pixelFormats
        captureHints = plugin.hints
        workerCount = c.instances
        maxQueuedFrames = c.queueDepth ?? queueDepth
        self.backpressure = c.backpressure ?? backpressure
        if c.maxFPS > 0 { connection.videoMinFrameDuration = 1 / c.maxFPS }
        connection.isVideoMirrored = c.mirror
        connection.videoRotationAngle = c.rotate
        if c.onMotion { motionGate = MotionGate(refresh: c.refresh) }
    }
}
