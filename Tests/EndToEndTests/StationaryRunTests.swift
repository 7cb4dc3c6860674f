import CVHostTestSupport
import Foundation
import Testing

/// A parked car through the binary: a white box drives into a bay, stands there 22 s and drives out
/// over a line; a detector (a Python plugin that boxes the white pixels) at 5 frames a second, given
/// every frame or gated on motion (`on_motion=true`: the still 22 s give it two frames).
@Suite("Stationary objects through a run")
struct StationaryRunTests {
    static let folder = TestFolders.make("stationary")
    static let python = ["CVHOST_PYTHON": "/usr/bin/python3"]

    /// 30 s at 10 fps of a grey 320x240 scene: a white 60x40 box from x 0 at 1 s to x 120 at 3 s,
    /// there until 25 s, then out to the right at 60 px/s.
    static func parkedCar() throws -> String {
        try MediaFixtures.make("parked-car.mp4", [
            "-f", "lavfi", "-i", "color=c=gray:s=320x240:r=10:d=30", "-f", "lavfi", "-i", "color=c=white:s=60x40:r=10",
            "-filter_complex", "[0][1]overlay=x='if(lt(t,1),-100,if(lt(t,3),(t-1)*60,if(lt(t,25),120,120+(t-25)*60)))':y=120:shortest=1",
            "-c:v", "libx264", "-pix_fmt", "yuv420p"])
    }

    /// The box around the frame's white pixels, a "car".
    static func detector() throws -> String {
        let path = folder + "/white_box.py"
        try """
            import cvhost
            import numpy as np

            class WhiteBox(cvhost.Plugin):
                api_version = (1, 0)
                name = "white_box"
                version = "1.0.0"
                description = "the box around the white pixels"
                pixel_formats = ("gray8",)
                stateless = True

                def __init__(self, options):
                    pass

                def process(self, frame):
                    ys, xs = np.nonzero(frame.array() > 200)
                    if len(xs) < 100:
                        return
                    x, y = int(xs.min()), int(ys.min())
                    self.emit("object", {"label": "car", "confidence": 0.9,
                                         "bounds": {"x": x, "y": y, "width": int(xs.max()) - x + 1, "height": int(ys.max()) - y + 1}})

            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func run(gated: Bool) throws -> CommandResult {
        let plugin = try detector() + ":max_fps=5" + (gated ? ",on_motion=true" : "")
        return try CVHostBinary.run(["run", "--plugin", plugin, "--input", try parkedCar(), "--motion", "on", "--track", "white_box",
                                     "--zone", "bay=100,0 200,0 200,240 100,240:dwell=10", "--line", "exit=260,0 260,240", "-q"],
                                    timeout: 180, environment: python)
    }

    @Test("gated on motion or given every frame: one track, in the bay once and out once, its dwell, one crossing of the exit line; stationary while parked (its results say so), then moving; the gated detector given under half the frames (48 of 137 here): the same frames at 5 a second while the car moves, at most two in the 12 s it stands")
    func gatedEqualsEvery() throws {
        let every = try Self.run(gated: false), gated = try Self.run(gated: true)
        for (name, r) in [("every", every), ("gated", gated)] {
            #expect(r.exitCode == 0, "\(name): \(r.stderr)")
            #expect(r.events("track.started").count == 1 && r.events("track.ended").count == 1, "\(name)")
            #expect(r.events("zone.entered").count == 1 && r.events("zone.exited").count == 1 && r.events("zone.dwell").count == 1, "\(name)")
            #expect(r.events("line.crossed").count == 1, "\(name)")
            let stationary = r.events("track.stationary").compactMap { ($0["data"] as? [String: Any])?["stationary"] as? Bool }
            #expect(stationary == [true, false], "\(name): \(stationary)")
            let flagged = r.events("result").filter { ($0["data"] as? [String: Any])?["stationary"] as? Bool == true }
            #expect(!flagged.isEmpty, "\(name)")
            #expect(try CVHostBinary.schemaProblems(r.stdout) == nil, "\(name)")
            // A gap with nothing moving is no gap the tracker warns of.
            #expect(!r.stderr.contains("passed between two frames"), "\(name): \(r.stderr)")
        }
        let given = { (r: CommandResult) in r.events("result").count }
        #expect(given(gated) * 2 < given(every), "gated: \(given(gated)) results, every: \(given(every))")
        // While the car moves (in from 1 s to 3 s, out from 25 s), the gated detector sees the same
        // frames at the rate asked (5 a second); while it stands (8 s to 20 s), at most a refresh's.
        let pts = { (r: CommandResult, from: Double, to: Double) in
            r.events("result").compactMap { $0["pts"] as? Double }.filter { $0 >= from && $0 < to }
        }
        #expect(pts(gated, 1.2, 2.8) == pts(every, 1.2, 2.8) && pts(every, 1.2, 2.8).count == 8, "\(pts(gated, 1.2, 2.8)) \(pts(every, 1.2, 2.8))")
        // Out again: the gate opens at the first frame that moves, the frame-rate cap counting from it.
        let out = pts(gated, 25.2, 27)
        #expect(out.count == pts(every, 25.2, 27).count && zip(out.dropFirst(), out).allSatisfy { abs($0 - $1 - 0.2) < 0.01 }, "\(out)")
        #expect(pts(gated, 8, 20).count <= 2 && pts(every, 8, 20).count == 60, "\(pts(gated, 8, 20))")
    }
}
