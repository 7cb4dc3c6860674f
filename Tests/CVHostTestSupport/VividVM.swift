import Foundation

/// Runs Tests/vivid/camera-checks.sh in a QEMU VM with the kernel's vivid driver
/// (scripts/vivid-run.sh), once per mode per test process, and reads back each step.
public enum VividVM {
    /// Why the VM cannot run here (a missing prerequisite), or nil.
    public static let unavailableReason: String? = {
        let fm = FileManager.default
        guard ["/usr/bin/qemu-system-x86_64", "/bin/busybox", "/usr/bin/v4l2-ctl"].allSatisfy(fm.fileExists) else {
            return "qemu-system-x86, busybox-static or v4l-utils is not installed (scripts/install-deps.sh --tests installs them)"
        }
        let kernels = ((try? fm.contentsOfDirectory(atPath: "/boot")) ?? []).filter { $0.hasPrefix("vmlinuz-") }
        guard !kernels.isEmpty else { return "no kernel in /boot (scripts/install-deps.sh --tests installs linux-image-amd64)" }
        return nil
    }()

    public struct Step: Sendable {
        public let exitCode: Int32
        public let stdout: String
        public let stderr: String

        public var events: [[String: Any]] {
            stdout.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        }

        public func events(_ name: String) -> [[String: Any]] { events.filter { $0["event"] as? String == name } }
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var folders: [String: String] = [:]

    /// The result of one step of camera-checks.sh in `mode` (webcam, loop or multiplanar).
    public static func step(_ name: String, mode: String) throws -> Step {
        let dir = try run(mode: mode)
        func read(_ ext: String) -> String { (try? String(contentsOfFile: "\(dir)/\(name).\(ext)", encoding: .utf8)) ?? "" }
        guard let rc = Int32(read("rc").trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: "\(dir)/\(name).rc (the VM run did not reach this step)"])
        }
        return Step(exitCode: rc, stdout: read("out"), stderr: read("err"))
    }

    /// Another file a step left (e.g. `live-controls.http`), as text; empty when there is none.
    public static func file(_ name: String, mode: String) throws -> String {
        (try? String(contentsOfFile: "\(try run(mode: mode))/\(name)", encoding: .utf8)) ?? ""
    }

    /// Schema problems in every JSON step output of `mode`, or nil.
    public static func schemaProblems(mode: String, steps: [String]) throws -> String? {
        let text = try steps.map { try step($0, mode: mode).stdout }.joined()
        return try CVHostBinary.schemaProblems(text)
    }

    private static func run(mode: String) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let done = folders[mode] { return done }
        let work = TestFolders.make("vivid")
        let root = PluginFixtures.packageRoot
        var command = "Tests/vivid/camera-checks.sh \(mode) \(work)/\(mode) \(CVHostBinary.path)"
        if mode != "webcam" { command += " " + (try BarcodeFixtures.path("qr-text.png")) }
        var environment = ["VIVID_MODE": mode, "VIVID_RWDIR": work, "VIVID_TIMEOUT": "600"]
        if mode == "multiplanar" {
            // The loop set-up, on nodes that speak only the multi-planar API.
            environment["VIVID_MODE"] = "loop"
            environment["VIVID_MODOPTS"] = "n_devs=1 node_types=0x101 multiplanar=2"
        }
        try Tool.check(root + "/scripts/vivid-run.sh", [command], environment: environment, currentDirectory: root)
        folders[mode] = work + "/" + mode
        return work + "/" + mode
    }
}
