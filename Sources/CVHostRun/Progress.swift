import CVHostCore
import CVHostSources
import Glibc

/// A one-line progress display on stderr for inputs with an end (files, images), shown only when
/// stderr is a terminal (logs piped to a file get no carriage-return noise) that the JSON lines
/// are not written to as well (the line would run into them: `cvhost: frame 42 of 300 {"event":…`).
struct Progress {
    let total: Int64

    /// nil when there is nothing to show: a live source, an unknown length, stderr not a terminal,
    /// or the same terminal as `jsonDescriptor` (stdout's lines, when stdout is an output).
    init?(device: CaptureDevice, enabled: Bool, jsonDescriptor: Int32?) {
        guard enabled, isatty(STDERR_FILENO) == 1 else { return nil }
        if let json = jsonDescriptor, Self.sameTerminal(json, STDERR_FILENO) { return nil }
        switch device {
        case let file as VideoFileDevice where file.frameCountHint > 0: total = file.frameCountHint
        case let images as StillImageDevice: total = Int64(images.paths.count)
        default: return nil
        }
    }

    func show(frames: UInt64, elapsedNs: UInt64) {
        let percent = min(100, Int64(frames) * 100 / max(1, total))
        let fps = Double(frames) / max(1e-9, Double(elapsedNs) / 1e9)
        write("\rcvhost: frame \(frames) of \(total) (\(percent)%), \(Int(fps.rounded())) fps ")
    }

    func finish(frames: UInt64) {
        write("\rcvhost: \(frames) frames read\u{1B}[K\n")
    }

    /// Whether two descriptors are the same terminal device.
    static func sameTerminal(_ a: Int32, _ b: Int32) -> Bool {
        var x = stat(), y = stat()
        return isatty(a) == 1 && isatty(b) == 1 && fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_rdev == y.st_rdev
    }

    private func write(_ text: String) {
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
