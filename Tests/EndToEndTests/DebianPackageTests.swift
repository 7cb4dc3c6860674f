import CVHostTestSupport
import Foundation
import Testing

/// The Debian package (scripts/build-deb.sh, which scripts/test.sh runs into .build/deb) installed
/// into a fresh Debian 12 root made by debootstrap, without the Swift toolchain: cvhost decodes the
/// demo there, its unit passes `systemd-analyze verify`, and the unit's own command line runs
/// from a config file.
@Suite("the .deb on a Debian 12 machine without Swift", .serialized)
struct DebianPackageTests {
    static let debFolder = PluginFixtures.packageRoot + "/.build/deb"

    /// Runs `command` with bash inside the root; its status and output.
    static func inRoot(_ root: String, _ command: String) throws -> Tool.Outcome {
        try Tool.run("chroot", [root, "/bin/bash", "-c", command],
                     environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"])
    }

    @Test("installs into a fresh Debian 12 root without Swift and decodes the demo; its unit verifies and its command line runs from a config file",
          .timeLimit(.minutes(15)))
    func installAndRun() throws {
        let debs = ((try? FileManager.default.contentsOfDirectory(atPath: DebianPackageTests.debFolder)) ?? []).filter { $0.hasSuffix(".deb") }
        let deb = try #require(debs.sorted().last.map { DebianPackageTests.debFolder + "/" + $0 },
                               "no package in .build/deb: run scripts/build-deb.sh .build/deb first (scripts/test.sh does)")
        let root = TestFolders.make("debian-root")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let strap = try Tool.run("debootstrap", ["--variant=minbase", "bookworm", root, "http://deb.debian.org/debian"])
        try #require(strap.status == 0, "debootstrap failed: \(strap.output.suffix(2000))")
        // A machine has /proc: the loader finds $ORIGIN (the RUNPATH of the bundled runtime) through /proc/self/exe.
        try #require(try Tool.run("mount", ["-t", "proc", "proc", root + "/proc"]).status == 0)
        defer { _ = try? Tool.run("umount", ["-l", root + "/proc"]) }
        #expect(!FileManager.default.fileExists(atPath: root + "/opt/swift") && !FileManager.default.fileExists(atPath: root + "/usr/bin/swift"))
        try FileManager.default.copyItem(atPath: "/etc/resolv.conf", toPath: root + "/etc/resolv.conf.cvhost")
        try FileManager.default.removeItem(atPath: root + "/etc/resolv.conf")
        try FileManager.default.moveItem(atPath: root + "/etc/resolv.conf.cvhost", toPath: root + "/etc/resolv.conf")
        try FileManager.default.copyItem(atPath: deb, toPath: root + "/tmp/cvhost.deb")
        try FileManager.default.copyItem(atPath: BarcodeFixtures.demoVideo, toPath: root + "/tmp/codes.mp4")
        // The face check's photo: the corpus is beside the project here and in CI; without it the test fails, not skips.
        try #require(Corpus.isPresent, "../shared/corpus is missing: the packaged face plugin cannot be checked")
        try FileManager.default.copyItem(atPath: Corpus.path("faces/images/640x480/face_640x480_astronaut.jpg"), toPath: root + "/tmp/face.jpg")

        // apt resolves the package's Depends from Debian's archive; systemd and man-db to check the unit and the manual.
        let install = try DebianPackageTests.inRoot(root, "apt-get update -q && apt-get install -y -q --no-install-recommends /tmp/cvhost.deb systemd man-db")
        try #require(install.status == 0, "apt-get install failed: \(install.output.suffix(3000))")
        let libraries = try DebianPackageTests.inRoot(root, "ldd /usr/bin/cvhost /usr/lib/cvhost/plugins/*.so")
        #expect(!libraries.output.contains("not found") && !libraries.output.contains("/opt/swift"), "\(libraries.output)")
        #expect(libraries.output.contains("/usr/bin/../lib/cvhost/swift/libswiftCore.so"))

        // The README's command, there.
        let run = try DebianPackageTests.inRoot(root, "cvhost run --plugin barcode --input /tmp/codes.mp4 --metrics-interval 0 2>/tmp/stderr; echo \"exit=$?\"; cat /tmp/stderr >&2")
        #expect(run.output.contains("exit=0"), "\(run.output.suffix(2000))")
        #expect(run.output.contains("\"text\":\"4006381333931\"") && run.output.contains("\"text\":\"https://example.com/cvhost?id=42\""))
        #expect(run.output.contains("\"event\":\"session.stopped\""))

        // The face plugin's CNN, found in the package (no build tree here): a face with its landmarks.
        let face = try DebianPackageTests.inRoot(root, "cvhost run --plugin face --input /tmp/face.jpg --metrics-interval 0 2>/tmp/stderr; echo \"exit=$?\"; cat /tmp/stderr >&2")
        #expect(face.output.contains("exit=0") && face.output.contains("\"detector\":\"cnn\"") && face.output.contains("\"left_eye\""),
                "\(face.output.suffix(2000))")

        // A Python plugin, from the package's example, with Debian's python3 and numpy (recommended, not required).
        let python = try DebianPackageTests.inRoot(root, """
            apt-get install -y -q --no-install-recommends python3 python3-numpy >/dev/null && cd /tmp && \
            cvhost plugins /usr/share/doc/cvhost/examples/brightness.py && \
            cvhost run --plugin /usr/share/doc/cvhost/examples/brightness.py:every=10 --input /tmp/codes.mp4 --max-frames 20 \
              --metrics-interval 0 2>/tmp/stderr; echo "exit=$?"; cat /tmp/stderr >&2
            """)
        #expect(python.output.contains("brightness 1.0.0") && python.output.contains("(Python API 1.0)"), "\(python.output.suffix(2000))")
        #expect(python.output.contains("exit=0") && python.output.contains("\"type\":\"brightness\""), "\(python.output.suffix(2000))")

        // The detect plugin, as its refusal says to set it up: a virtual environment over Debian's python3
        // (with its OpenCV) and onnxruntime from PyPI, the version the project pins.
        try FileManager.default.copyItem(atPath: DetectPluginTests.model("yolov8"), toPath: root + "/tmp/yolov8.onnx")
        let onnxruntime = try String(contentsOfFile: PluginFixtures.packageRoot + "/scripts/make-onnx-venv.sh", encoding: .utf8)
            .split(separator: "\n").first { $0.hasPrefix("onnxruntime=") }?.dropFirst("onnxruntime=".count) ?? "?"
        // Its wheels are fetched here, with this machine's pip settings (the root has none: no proxy's CA).
        let wheels = try Tool.run(DetectPluginTests.venvPython, ["-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                                                                  "--only-binary=:all:", "-d", root + "/tmp/wheels", "onnxruntime==\(onnxruntime)"])
        #expect(wheels.status == 0, "\(wheels.output)")
        let detect = try DebianPackageTests.inRoot(root, """
            cvhost run --plugin detect:model=/tmp/yolov8.onnx --input /tmp/face.jpg 2>&1 | grep -o '[a-z0-9 ]* cannot be imported by [^,]*'; \
            apt-get install -y -q --no-install-recommends python3-venv python3-opencv >/dev/null && \
            python3 -m venv --system-site-packages /opt/onnx && \
            /opt/onnx/bin/pip install -q --no-index --find-links /tmp/wheels onnxruntime==\(onnxruntime) && cd /tmp && \
            CVHOST_PYTHON=/opt/onnx/bin/python3 cvhost run --plugin detect:model=yolov8.onnx --input /tmp/face.jpg \
              --metrics-interval 0 2>/tmp/stderr; echo "exit=$?"; cat /tmp/stderr >&2
            """)
        // Debian's python3 has numpy but neither onnxruntime nor (not yet) OpenCV's bindings: both named, with the command.
        #expect(detect.output.contains("onnxruntime and cv2 cannot be imported by /usr/bin/python3"), "\(detect.output.suffix(2000))")
        #expect(detect.output.contains("exit=0") && detect.output.contains("\"type\":\"object\"") && detect.output.contains("\"label\":\"cat\""),
                "\(detect.output.suffix(2000))")

        // What else the package holds: plugins found by name, the manual, completions, the page, the header, the schema.
        let plugins = try DebianPackageTests.inRoot(root, "cvhost plugins")
        for name in ["barcode", "detect", "face", "motion", "null"] { #expect(plugins.output.contains("\(name) "), "\(plugins.output)") }
        let files = try DebianPackageTests.inRoot(root, """
            man -w cvhost && ls /usr/share/bash-completion/completions/cvhost /usr/share/zsh/vendor-completions/_cvhost \
            /usr/share/fish/vendor_completions.d/cvhost.fish /usr/share/cvhost/web/index.html /usr/include/cvhost/plugin.h \
            /usr/share/cvhost/cvhost-events.schema.json /usr/share/doc/cvhost/examples/camera.yaml
            """)
        #expect(files.status == 0, "\(files.output)")

        // The unit: systemd's own check, then its ExecStart as written, with %i = demo, from /etc/cvhost/demo.yaml.
        try """
            input: /tmp/codes.mp4
            plugin:
              - name: barcode
                symbologies: ean13
            output: ["-", "file:/tmp/demo.jsonl"]
            metrics-interval: 0
            """.write(toFile: root + "/etc/cvhost/demo.yaml", atomically: true, encoding: .utf8)
        let verify = try DebianPackageTests.inRoot(root, "systemd-analyze verify cvhost@demo.service")
        #expect(verify.status == 0 && verify.output.isEmpty, "\(verify.output)")
        let unit = try String(contentsOfFile: root + "/lib/systemd/system/cvhost@.service", encoding: .utf8)
        let execStart = try #require(unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") }?.dropFirst("ExecStart=".count))
        // systemd makes the unit's StateDirectory (where --state keeps changes) before it starts it.
        let service = try DebianPackageTests.inRoot(root, "mkdir -p /var/lib/cvhost/demo && "
                                                    + execStart.replacingOccurrences(of: "%i", with: "demo") + " </dev/null 2>/tmp/stderr; echo \"exit=$?\"")
        #expect(service.output.contains("exit=0"), "\(service.output.suffix(2000))")
        let written = try String(contentsOfFile: root + "/tmp/demo.jsonl", encoding: .utf8)
        #expect(written.contains("\"symbology\":\"ean13\"") && !written.contains("\"symbology\":\"qrcode\""))
        // No progress line for the journal: stderr is not a terminal.
        let stderr = try String(contentsOfFile: root + "/tmp/stderr", encoding: .utf8)
        #expect(!stderr.contains("\r") && !stderr.contains("frame 1 of"), "\(stderr)")
    }
}
