import CVHostCore
import CVHostSources
import CVHostV4L2

/// Opening the inputs of `cvhost run`: files, images, streams and the test pattern through
/// InputResolver, cameras through V4L2 with --format, --pixel-format and --control applied.
extension InputStage {
    /// Opens one input. `onSkip` hears of images that cannot be read.
    /// - Returns: the device, and what became of --control settings (cameras only).
    /// - Throws: CaptureError (the caller's exit 3).
    static func open(_ spec: InputSpec, settings: RunSettings, firstCamera: V4L2NodeInfo?,
                     onSkip: @escaping @Sendable (String, String) -> Void) throws -> (CaptureDevice, [SettingReport]) {
        let camera: V4L2CaptureDevice
        switch spec.kind {
        case .input(let text):
            var streamOptions = StreamOptions()
            streamOptions.rtspTransport = settings.rtspTransport
            streamOptions.openTimeout = settings.openTimeout
            streamOptions.reconnect = settings.reconnect
            return (try InputResolver.device(for: InputSpec.streams(text).source, streamOptions: streamOptions, maxImagePixels: settings.maxImagePixels, onSkip: onSkip), [])
        case .camera(let path):
            do {
                camera = try V4L2CaptureDevice(path: path)
            } catch let error as CaptureError where error.code == .inputUnavailable && settings.reconnect {
                // Not there yet (a USB camera at boot): waited for, and set up as asked when it comes.
                return (V4L2AwaitedCamera(path: path, why: error.message, setUp: { try configure($0, settings: settings) }), [])
            }
        case .firstCamera:
            guard let firstCamera else {
                throw CaptureError(.inputUnavailable, "no camera found (cvhost devices lists them): give --device or --input")
            }
            Log.info("using \(firstCamera.path) (\(firstCamera.card))")
            camera = try V4L2CaptureDevice(path: firstCamera.path)
        }
        let reports = try configure(camera, settings: settings)
        camera.reconnects = settings.reconnect
        return (camera, reports)
    }

    /// Applies --format, --pixel-format and --control under the configuration lock; returns
    /// what was requested and applied for each control.
    static func configure(_ camera: V4L2CaptureDevice, settings: RunSettings) throws -> [SettingReport] {
        try camera.lockForConfiguration()
        defer { camera.unlockForConfiguration() }
        let request = try FormatRequest(parsing: settings.format ?? "medium", pixelFormat: settings.pixelFormat)
        if request.size != .inputPriority {
            let (chosen, fps) = try request.choose(from: camera.formats)
            try camera.setActiveFormat(chosen, frameRate: fps)
            Log.debug("format \(camera.activeFormat.map(\.description) ?? "?") at \(camera.activeFrameRate) fps")
        }
        return try settings.controls.map { pair in
            let eq = pair.firstIndex(of: "=")!
            let report = try camera.setControl(String(pair[..<eq]), to: String(pair[pair.index(after: eq)...]))
            if report.status != .applied {
                Log.warning("control \(report.setting)=\(report.requested): \(report.status.rawValue)\(report.message.map { ": " + $0 } ?? "")")
            }
            return report
        }
    }
}
