import CVHostTestSupport
import Foundation
import Testing

/// cvhost against a real V4L2 kernel driver: vivid, in a QEMU VM (scripts/vivid-run.sh).
/// vivid has brightness, contrast, saturation, hue, gain and flips, and no focus, exposure,
/// white balance, zoom or torch: the "not supported" paths are tested on those.
@Suite("cameras (vivid in a VM)", .enabled(if: Requirement.met(VividVM.unavailableReason == nil), "\(VividVM.unavailableReason ?? "")"))
struct CameraTests {
    @Test("cvhost devices lists vivid's capture node with its formats and frame rates")
    func devices() throws {
        let s = try VividVM.step("devices", mode: "webcam")
        #expect(s.exitCode == 0, "\(s.stderr)")
        let devices = s.events("device")
        #expect(devices.count == 1, "only the capture node, not vivid's output node")
        let d = try #require(devices.first)
        #expect(d["path"] as? String == "/dev/video0" && d["driver"] as? String == "vivid")
        let formats = try #require(d["formats"] as? [[String: Any]])
        #expect(formats.contains { $0["fourcc"] as? String == "YUYV" && $0["width"] as? Int == 640 && $0["height"] as? Int == 480 })
        #expect(formats.contains { ($0["frame_rates"] as? [[String: Double]])?.isEmpty == false })
        let controls = (d["controls"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(controls.contains("brightness") && !controls.contains("focus_absolute"))
        let text = try VividVM.step("devices-text", mode: "webcam")
        #expect(text.stdout.contains("/dev/video0: vivid") && text.stdout.contains("YUYV"))
        #expect(try VividVM.schemaProblems(mode: "webcam", steps: ["devices"]) == nil)
    }

    @Test("streaming with a chosen format and controls; requested and applied settings reported")
    func run() throws {
        let s = try VividVM.step("run", mode: "webcam")
        #expect(s.exitCode == 0, "\(s.stderr)")
        #expect(try VividVM.schemaProblems(mode: "webcam", steps: ["run", "default-camera", "nv12", "disconnect"]) == nil)
        let started = try #require(s.events("session.started").first)
        let format = try #require(started["format"] as? [String: Any])
        #expect(format["width"] as? Int == 640 && format["height"] as? Int == 480)
        #expect((started["device"] as? [String: Any])?["kind"] as? String == "camera")
        let settings = (started["settings"] as? [[String: Any]] ?? []).reduce(into: [String: [String: Any]]()) {
            $0[$1["setting"] as? String ?? ""] = $1
        }
        #expect(settings["brightness"]?["status"] as? String == "applied" && settings["brightness"]?["applied"] as? String == "140")
        // A control vivid lacks, and the barcode plugin's near focus: reported, never a crash.
        for control in ["focus_absolute", "focus_auto", "exposure_auto", "white_balance_auto", "zoom_absolute", "torch"] {
            #expect(settings[control]?["status"] as? String == "unsupported", "\(control): \(settings[control] ?? [:])")
            #expect(settings[control]?["applied"] is NSNull)
        }
        #expect(settings["auto_focus_range"]?["requested"] as? String == "near")
        #expect(settings["auto_focus_range"]?["status"] as? String == "unsupported")
        #expect(s.stderr.contains("focus_absolute=10: unsupported"))
        CameraTests.expectEveryFrameAccounted(s, plugin: "null", frames: 30)
        #expect(s.events.last?["reason"] as? String == "frame_limit")
    }

    @Test("without --device the first camera is used; NV12 is delivered as it is")
    func defaultCameraAndPixelFormat() throws {
        let d = try VividVM.step("default-camera", mode: "webcam")
        #expect(d.exitCode == 0 && d.stderr.contains("using /dev/video0"), "\(d.stderr)")
        let nv12 = try VividVM.step("nv12", mode: "webcam")
        #expect(nv12.exitCode == 0, "\(nv12.stderr)")
        #expect((nv12.events("session.started").first?["format"] as? [String: Any])?["fourcc"] as? String == "NV12")
        let processed = CameraTests.expectEveryFrameAccounted(nv12, plugin: "null", frames: 10)
        #expect(nv12.events("result").count == processed, "results=1: one result per processed frame")
    }

    @Test("--clips on a raw YUYV camera: its frames encoded with libx264 into a clip (clip.saved) that decodes to its end")
    func clipOfARawCamera() throws {
        let clip = try VividVM.step("clip", mode: "webcam")
        #expect(clip.exitCode == 0, "\(clip.stderr)")
        let saved = try #require(clip.events("clip.saved").first?["data"] as? [String: Any], "\(clip.stderr)")
        #expect((saved["packets"] as? Int ?? 0) > 0 && (saved["bytes"] as? Int ?? 0) > 0, "\(saved)")
        let decoded = try VividVM.step("clip-decodes", mode: "webcam")
        #expect(decoded.exitCode == 0, "\(decoded.stderr)")
        #expect(try VividVM.schemaProblems(mode: "webcam", steps: ["clip"]) == nil)
    }

    /// A live camera under drop-late: every captured frame reached the plugin or is a counted
    /// late drop. (The emulated VM can stall a worker long enough to drop frames, so a number
    /// processed would be a timing assertion.) Returns the number processed.
    @discardableResult
    static func expectEveryFrameAccounted(_ s: VividVM.Step, plugin: String, frames: Int,
                                          sourceLocation: SourceLocation = #_sourceLocation) -> Int {
        let metrics = s.events("metrics").last { $0["plugin"] as? String == plugin }
        let counts = metrics?["frames"] as? [String: Any] ?? [:]
        let processed = counts["processed"] as? Int ?? -1
        let dropped = counts["dropped"] as? [String: Int] ?? [:]
        #expect(counts["offered"] as? Int == frames, "\(counts)", sourceLocation: sourceLocation)
        #expect(processed + (counts["dropped_total"] as? Int ?? -1) == frames, "\(counts)", sourceLocation: sourceLocation)
        // How many of them came in time is the emulated VM's pace, not cvhost's (3 of 10 on a loaded
        // machine): only none at all is a defect (frames captured and never delivered).
        #expect(processed > 0 && dropped["frame_rate_cap"] == 0, "\(counts)", sourceLocation: sourceLocation)
        return processed
    }

    @Test("refusals: a format the camera lacks, a bad control value, a busy camera")
    func refusals() throws {
        let format = try VividVM.step("bad-format", mode: "webcam")
        #expect(format.exitCode == 3 && format.stderr.contains("offers no 9999x9999"), "\(format.stderr)")
        #expect(format.stdout.isEmpty)
        let near = try VividVM.step("near-size", mode: "webcam")
        #expect(near.exitCode == 0, "a size between the offered ones takes the next larger: \(near.stderr)")
        let control = try VividVM.step("bad-control", mode: "webcam")
        #expect(control.exitCode == 3 && control.stderr.contains("brightness=bright is not valid"), "\(control.stderr)")
        let output = try VividVM.step("not-capture", mode: "webcam")
        #expect(output.exitCode == 3 && output.stderr.contains("/dev/video1") && output.stderr.contains("not a video-capture node"),
                "\(output.stderr)")
        let busy = try VividVM.step("busy", mode: "webcam")
        #expect(busy.exitCode == 3 && busy.stderr.contains("busy"), "\(busy.stderr)")
    }

    @Test("brightness changed while running, by a command on stdin and by POST /controls: read back from the camera, each a control.changed line")
    func controlsWhileRunning() throws {
        let s = try VividVM.step("live-controls", mode: "webcam")
        #expect(s.exitCode == 0, "\(s.stderr)")
        #expect(try VividVM.schemaProblems(mode: "webcam", steps: ["live-controls"]) == nil)
        #expect(try VividVM.file("live-controls.stdin-readback", mode: "webcam").contains("brightness: 150"))
        #expect(try VividVM.file("live-controls.http-readback", mode: "webcam").contains("brightness: 170"))
        let http = try VividVM.file("live-controls.http", mode: "webcam")
        #expect(http.hasSuffix("200\n") && http.contains("\"applied\":\"170\""), "\(http)")
        #expect(try VividVM.file("live-controls.get", mode: "webcam").contains("\"name\":\"brightness\""))
        let answers = s.events("command.result")
        #expect(answers.first?["id"] as? String == "from-stdin" && answers.first?["ok"] as? Bool == true, "\(answers)")
        #expect(((answers.first?["result"] as? [String: Any])?["applied"] as? String) == "150")
        let changes = s.events("control.changed")
        #expect(changes.map { "\($0["name"] ?? "") \($0["applied"] ?? "") \($0["by"] ?? "")" } == ["brightness 150 stdin", "brightness 170 http"])
        #expect(s.events("session.stopped").first?["reason"] as? String == "requested")
    }

    @Test("a camera removed mid-run: session.error, final metrics, session.stopped, exit 2")
    func disconnect() throws {
        let s = try VividVM.step("disconnect", mode: "webcam")
        #expect(s.exitCode == 2, "\(s.stderr)")
        #expect(s.events("session.error").first?["code"] as? String == "disconnected")
        let tail = s.events.suffix(2).compactMap { $0["event"] as? String }
        #expect(tail == ["metrics", "session.stopped"])
        #expect(s.events.last?["reason"] as? String == "error")
        #expect((s.events("metrics").last?["frames"] as? [String: Any])?["processed"] as? Int ?? 0 > 0)
    }

    @Test("--reconnect: an unplugged camera is waited for and streams again when it is back; hot-plug events")
    func reconnect() throws {
        let s = try VividVM.step("reconnect", mode: "webcam")
        #expect(s.exitCode == 0, "\(s.stderr)")
        #expect(try VividVM.schemaProblems(mode: "webcam", steps: ["reconnect"]) == nil)
        let names = s.events.compactMap { $0["event"] as? String }
        let down = try #require(names.firstIndex(of: "session.interrupted"), "no session.interrupted: \(names.suffix(5))")
        let back = try #require(names.firstIndex(of: "session.interruption_ended"), "no session.interruption_ended")
        #expect(down < back)
        #expect((s.events[down]["reason"] as? String)?.contains("waiting for it to come back") == true)
        #expect(names[back...].contains("result"), "frames flow again after the camera is back")
        #expect(!names.contains("session.error"))
        // Stopped while it streams again: the unplugging's interruption the only one.
        #expect(names.filter { $0 == "session.interrupted" }.count == 1, "\(names.suffix(6))")
        // Stopped by SIGINT once frames flowed again (the script waits for that, not for a time).
        #expect(s.events.last?["reason"] as? String == "signal")
        // The hot-plug monitor saw the node go and come back, as the same camera.
        let camera = (s.events("session.started").first?["device"] as? [String: Any])?["unique_id"] as? String
        let gone = try #require(names.firstIndex(of: "device.disconnected"), "no device.disconnected: \(names.suffix(8))")
        let came = try #require(names.firstIndex(of: "device.connected"), "no device.connected: \(names.suffix(8))")
        #expect(gone < came)
        for i in [gone, came] {
            #expect(s.events[i]["path"] as? String == "/dev/video0" && s.events[i]["unique_id"] as? String == camera, "\(s.events[i])")
        }
        #expect(s.stderr.contains("camera connected: /dev/video0"))
    }

    @Test("a camera not there at start, with --reconnect: the input starts interrupted (its format null), then the camera is set to the format asked and streams once its node appears")
    func awaitedAtStart() throws {
        let s = try VividVM.step("awaited", mode: "webcam")
        #expect(s.exitCode == 0, "\(s.stderr)")
        #expect(try VividVM.schemaProblems(mode: "webcam", steps: ["awaited"]) == nil)
        let names = s.events.compactMap { $0["event"] as? String }
        #expect(Array(names.prefix(2)) == ["session.started", "session.interrupted"], "\(names.prefix(6))")
        #expect((s.events("session.started").first?["format"]).map { $0 is NSNull } == true)
        let back = try #require(names.firstIndex(of: "session.interruption_ended"), "\(names.prefix(8))")
        #expect(names[back...].contains("result"), "frames once the camera came")
        #expect(s.stderr.contains("--reconnect waits for it") && s.stderr.contains("is there: streaming"), "\(s.stderr)")
        // A stop is a stop: SIGINT while the camera streams is no interruption or error of its own.
        #expect(names.filter { $0 == "session.interrupted" }.count == 1 && !names.contains("session.error"), "\(names.suffix(6))")
        #expect(s.events.last?["reason"] as? String == "signal")
    }

    @Test("a QR code written to vivid's output is decoded from its capture node")
    func barcodeThroughTheCamera() throws {
        let s = try VividVM.step("loop", mode: "loop")
        #expect(s.exitCode == 0, "\(s.stderr)")
        #expect(try VividVM.schemaProblems(mode: "loop", steps: ["loop"]) == nil)
        let texts = s.events("result").compactMap { ($0["data"] as? [String: Any])?["text"] as? String }
        #expect(!texts.isEmpty && texts.allSatisfy { $0 == "https://example.com/cvhost?id=42" })
    }

    @Test("Bayer (BA81), which only libv4lconvert reads: the camera is set to it, its frames converted and the QR code read")
    func bayerThroughLibv4lconvert() throws {
        let s = try VividVM.step("loop-bayer", mode: "loop")
        #expect(s.exitCode == 0, "\(s.stderr)")
        #expect((s.events("session.started").first?["format"] as? [String: Any])?["fourcc"] as? String == "BA81")
        let texts = s.events("result").compactMap { ($0["data"] as? [String: Any])?["text"] as? String }
        #expect(!texts.isEmpty && texts.allSatisfy { $0 == "https://example.com/cvhost?id=42" }, "\(s.stderr)")
        #expect(try VividVM.schemaProblems(mode: "loop", steps: ["loop-bayer"]) == nil)
    }

    @Test("a multi-planar capture node (vivid multiplanar=2): listed, and streamed in YUYV, NV12M and YUV420M")
    func multiPlanar() throws {
        let devices = try VividVM.step("mp-devices", mode: "multiplanar")
        let formats = (devices.events("device").first?["formats"] as? [[String: Any]] ?? []).compactMap { $0["fourcc"] as? String }
        #expect(Set(["YUYV", "NM12", "YM12"]).isSubset(of: formats), "\(devices.stderr)")
        // The QR code through the loop, in a one-buffer format and in one with a buffer per plane.
        for step in ["mp-yuyv", "mp-nv12m"] {
            let s = try VividVM.step(step, mode: "multiplanar")
            #expect(s.exitCode == 0, "\(step): \(s.stderr)")
            let texts = s.events("result").compactMap { ($0["data"] as? [String: Any])?["text"] as? String }
            #expect(!texts.isEmpty && texts.allSatisfy { $0 == "https://example.com/cvhost?id=42" }, "\(step)")
        }
        let nv12m = try VividVM.step("mp-nv12m", mode: "multiplanar")
        #expect((nv12m.events("session.started").first?["format"] as? [String: Any])?["fourcc"] as? String == "NM12")
        // In a worker process: the code read from the driver's own buffers, exported as dmabufs, with no copy.
        let isolated = try VividVM.step("mp-nv12m-isolated", mode: "multiplanar")
        let texts = isolated.events("result").compactMap { ($0["data"] as? [String: Any])?["text"] as? String }
        #expect(!texts.isEmpty && texts.allSatisfy { $0 == "https://example.com/cvhost?id=42" }, "\(isolated.stderr)")
        let worker = isolated.events("metrics").last?["worker"] as? [String: Any]
        #expect((worker?["shared_frames"] as? Int ?? 0) > 0 && worker?["copied_frames"] as? Int == 0, "\(worker ?? [:])")
        let yuv420m = try VividVM.step("mp-yuv420m", mode: "multiplanar")
        #expect(yuv420m.exitCode == 0, "\(yuv420m.stderr)")
        CameraTests.expectEveryFrameAccounted(yuv420m, plugin: "null", frames: 10)
        #expect(try VividVM.schemaProblems(mode: "multiplanar", steps: ["mp-devices", "mp-yuyv", "mp-nv12m", "mp-nv12m-isolated", "mp-yuv420m", "mp-corrupt"]) == nil)
    }

    @Test("frames the driver flags as errored are dropped and counted as corrupt, never handed on")
    func corruptFrames() throws {
        let s = try VividVM.step("mp-corrupt", mode: "multiplanar")
        #expect(s.exitCode == 0, "\(s.stderr)")
        let corrupt = s.events("session.frames_lost").filter { $0["reason"] as? String == "corrupt" }
        let total = corrupt.compactMap { $0["count"] as? Int }.reduce(0, +)
        #expect(total >= 1 && total <= 3, "three errors injected: \(corrupt)")
        let stopped = try #require(s.events("session.stopped").first)
        #expect((stopped["frames_lost"] as? [String: Int])?["corrupt"] == total)
    }
}
