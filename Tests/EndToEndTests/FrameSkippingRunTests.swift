import CVHostTestSupport
import Foundation
import Testing

/// A plugin at 5 frames a second of a 30 fps H.264 file with B-frames: the frames no other frame
/// depends on are not decoded (FFmpeg's skip_frame), and the plugin is given as many frames.
@Suite("Frame skipping: decoding less for plugins taking few frames")
struct FrameSkippingRunTests {
    static let folder = TestFolders.make("frame-skipping")

    /// 90 frames at 30 a second, x264 with `params` (its B-frames).
    static func clip(_ name: String, _ params: String) throws -> String {
        let path = folder + "/\(name).mp4"
        if !FileManager.default.fileExists(atPath: path) {
            let r = try Tool.run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-frames:v", "90",
                                            "-c:v", "libx264", "-x264-params", params, "-pix_fmt", "yuv420p", path])
            try #require(r.status == 0, "\(r.output)")
        }
        return path
    }

    /// The capped plugin's frames offered (decoded frames) and its results' pts, alone and beside a
    /// plugin taking every frame (which makes the whole stream decoded).
    static func run(_ clip: String, beside: Bool) throws -> (CommandResult, offered: Int, pts: [Double]) {
        let r = try CVHostBinary.run(["run", "--plugin", "null:max_fps=5,results=1"] + (beside ? ["--plugin", "null"] : [])
                                     + ["--input", clip, "--metrics-interval", "0"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        let final = r.events("metrics").first { $0["final"] as? Bool == true && $0["plugin_index"] as? Int == 0 }
        let offered = (final?["frames"] as? [String: Any])?["offered"] as? Int ?? -1
        let pts = r.events("result").filter { $0["plugin_index"] as? Int == 0 }.compactMap { $0["pts"] as? Double }
        return (r, offered, pts)
    }

    @Test("a B-pyramid (x264's default): 5 of 30 a second decodes about half the frames, gives as many frames (within one), 200-267 ms apart; said once")
    func pyramid() throws {
        let clip = try Self.clip("pyramid", "bframes=3:b-pyramid=normal:keyint=30")
        let (skipped, offered, pts) = try Self.run(clip, beside: false)
        let (_, all, ptsAll) = try Self.run(clip, beside: true)
        #expect(all == 90 && offered < 70, "decoded \(offered) of \(all)")
        // The cap passes the first frame due: with every other frame left, it comes at most two
        // frames later than it would (a 5 a second plugin's frames 200-267 ms apart, not 200).
        #expect(ptsAll.count == 15 && abs(pts.count - ptsAll.count) <= 1, "\(pts) \(ptsAll)")
        let gaps = zip(pts.dropFirst(), pts).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= 0.2 - 0.002 && $0 <= 0.2 + 2 / 30 + 0.002 }, "\(pts)")
        #expect(skipped.stderr.contains("frames no other frame depends on (B-frames) are not decoded"), "\(skipped.stderr)")
        #expect(!skipped.stderr.contains("ends after"), "not taken for a file cut short: \(skipped.stderr)")
    }

    @Test("three B-frames without a pyramid leave one frame in four: decoded whole from the first gap, said; I and P frames only: every frame decoded, nothing said")
    func notWorthIt() throws {
        let flat = try Self.clip("flat", "bframes=3:b-pyramid=none:keyint=30")
        let (r, _, pts) = try Self.run(flat, beside: false)
        #expect(pts.count == 15)
        #expect(r.stderr.contains("its frames are decoded whole"), "\(r.stderr)")
        let plain = try Self.clip("plain", "bframes=0:keyint=30")
        let (p, offered, ptsPlain) = try Self.run(plain, beside: false)
        #expect(offered == 90 && ptsPlain.count == 15, "\(offered)")
        #expect(!p.stderr.contains("decoded whole") && !p.stderr.contains("are not decoded"), "nothing skipped, nothing said: \(p.stderr)")
    }

    @Test("a keyframe every 10 frames (1/3 s) and a plugin at 1 a second: only keyframes are decoded once two are read (18 of 90), said once, the plugin given the same frames as when every frame is decoded; with --motion (which looks at every frame), all 90")
    func keyframesOnly() throws {
        let clip = try Self.clip("keyint10", "bframes=0:keyint=10:min-keyint=10:scenecut=0")
        func run(_ extra: [String]) throws -> (CommandResult, offered: Int, pts: [Double]) {
            let r = try CVHostBinary.run(["run", "--plugin", "null:max_fps=1,results=1", "--input", clip, "--metrics-interval", "0"] + extra)
            #expect(r.exitCode == 0, "\(r.stderr)")
            let final = r.events("metrics").first { $0["final"] as? Bool == true && $0["plugin_index"] as? Int == 0 }
            return (r, (final?["frames"] as? [String: Any])?["offered"] as? Int ?? -1, r.events("result").compactMap { $0["pts"] as? Double })
        }
        let (r, offered, pts) = try run([])
        #expect(offered == 18, "keyframes 0-80 (9), and frames 1-9 read before the second keyframe: \(offered)")
        #expect(pts == [0, 1, 2], "\(pts)")
        #expect(r.stderr.components(separatedBy: "only its keyframes are decoded").count == 2 && r.stderr.contains("come every 0.33 s"), "\(r.stderr)")
        let (m, all, ptsAll) = try run(["--motion", "on"])
        #expect(all == 90 && ptsAll == pts && !m.stderr.contains("keyframes are decoded"), "\(all)")
    }
}
