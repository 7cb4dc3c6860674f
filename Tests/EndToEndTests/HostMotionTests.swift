import CVHostTestSupport
import Foundation
import Testing

/// The host's own motion (`--motion`): a still grey scene that a white square crosses from 1 s on.
@Suite("motion seen by the host")
struct HostMotionTests {
    static func boxes(_ e: [String: Any]) -> [[String: Double]] {
        (e["boxes"] as? [[String: Any]] ?? []).map { $0.compactMapValues { ($0 as? NSNumber)?.doubleValue } }
    }

    @Test("--motion on: one motion.started at the square's first frame, its box around the square; motion.ended when the input ends; valid lines")
    func startsAndEnds() throws {
        let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", try MediaFixtures.motionClip(), "--motion", "on", "-q"])
        #expect(r.exitCode == 22, "\(r.stderr)")  // the null plugin writes no result
        let started = r.events("motion.started"), ended = r.events("motion.ended")
        #expect(started.count == 1 && ended.count == 1, "\(started) \(ended)")
        let start = try #require(started.first)
        // The square (80x80 at y 80) enters at x 0 on frame 30 (t 1 s).
        #expect(start["seq"] as? Int == 30 && abs((start["pts"] as? Double ?? 0) - 1) < 0.001, "\(start)")
        let box = try #require(Self.boxes(start).first)
        #expect(box["x"]! <= 4 && box["y"]! <= 84 && box["y"]! >= 64 && box["width"]! >= 76 && box["width"]! <= 100 && box["height"]! >= 76
                && box["height"]! <= 100, "\(box)")
        #expect((ended.first?["seconds"] as? Double ?? 0) > 0.8, "\(ended)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
    }

    @Test("motion: on in a config file (YAML may make it true) is --motion on")
    func inConfig() throws {
        let config = TestFolders.make("host-motion") + "/motion.yaml"
        try "plugin: [null]\ninput: [\(try MediaFixtures.motionClip())]\nmotion: on\n".write(toFile: config, atomically: true, encoding: .utf8)
        let r = try CVHostBinary.run(["run", "--config", config, "-q"])
        #expect(r.events("motion.started").count == 1 && r.events("motion.ended").count == 1, "\(r.stderr)")
    }

    @Test("the still part alone: no motion; a --mask over the square's path (no --track needed): none either")
    func stillAndMasked() throws {
        let clip = try MediaFixtures.motionClip()
        let still = try CVHostBinary.run(["run", "--plugin", "null", "--input", clip, "--max-frames", "29", "--motion", "on", "-q"])
        #expect(still.events("motion.started").isEmpty && still.events("session.stopped").count == 1, "\(still.stdout.prefix(500))")
        let masked = try CVHostBinary.run(["run", "--plugin", "null", "--mask", "road=0,60 320,60 320,180 0,180", "--input", clip,
                                          "--motion", "on", "-q"])
        #expect(masked.events("motion.started").isEmpty && masked.events("session.stopped").count == 1, "\(masked.stderr)")
    }

    @Test("refusals, one line each, exit 64: a setting out of range, one it does not have, not key=value; a mask with neither --track nor --motion")
    func refusals() throws {
        let maskAlone = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "--mask", "m=0,0 10,0 10,10"])
        #expect(maskAlone.exitCode == 64 && maskAlone.stderr.contains("add --track PLUGIN (the plugin whose boxes are followed) or --motion"), "\(maskAlone.stderr)")
        for (value, said) in [("height=8", "motion: height is a number from 16"), ("colour=1", "motion: no setting 'colour'"),
                              ("fast", "motion: 'fast' is not key=value")] {
            let r = try CVHostBinary.run(["run", "--plugin", "null", "--input", "testsrc", "--motion", value])
            #expect(r.exitCode == 64 && r.stderr.contains(said) && r.stderr.split(separator: "\n").count == 1, "\(value): \(r.stderr)")
        }
    }

    static func results(_ r: CommandResult, plugin index: Int = 0) -> [Int] {
        r.events("result").filter { $0["plugin_index"] as? Int == index }.compactMap { $0["seq"] as? Int }
    }

    @Test("on_motion=true (motion looked for with its defaults): the plugin gets the frames that move, the still ones counted as dropped (no_motion); motion_refresh=0.5 lets a still frame through every half second; a plugin not gated gets every frame")
    func gated() throws {
        let clip = try MediaFixtures.motionClip()
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1,on_motion=true,motion_refresh=0", "--plugin", "null:results=1,on_motion=true,motion_refresh=0.5",
                                      "--plugin", "null:results=1", "--input", clip, "-q"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(r.events("motion.started").count == 1, "motion is on without --motion")
        // The square moves from frame 30 to the last (59).
        #expect(Self.results(r, plugin: 0) == Array(30...59), "\(Self.results(r, plugin: 0))")
        #expect(Self.results(r, plugin: 1) == [0, 15] + Array(30...59), "\(Self.results(r, plugin: 1))")
        #expect(Self.results(r, plugin: 2) == Array(0...59))
        let final = r.events("metrics").filter { $0["final"] as? Bool == true && $0["plugin_index"] as? Int == 0 }.first
        let dropped = (final?["frames"] as? [String: Any])?["dropped"] as? [String: Any]
        #expect(dropped?["no_motion"] as? Int == 30, "\(final ?? [:])")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
    }
}
