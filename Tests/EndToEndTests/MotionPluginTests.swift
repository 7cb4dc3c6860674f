import CVHostTestSupport
import Foundation
import Testing

/// The motion plugin (written in Swift against the C header).
@Suite("motion plugin")
struct MotionPluginTests {
    @Test("by default one line when motion starts (after hold, 0.3 s): none for the still frames, none per moving frame")
    func reportsChanges() throws {
        let r = try CVHostBinary.run(["run", "--plugin", "motion", "--input", try MediaFixtures.motionClip(), "-q"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        let results = r.events("result")
        #expect(results.count == 1, "\(results)")
        let started = try #require(results.first)
        #expect((started["data"] as? [String: Any])?["started"] as? Bool == true)
        // The square enters at frame 30; 0.3 s later (9 frames at 30 fps) motion is reported.
        #expect((37...42).contains(started["seq"] as? Int ?? 0), "\(started)")
    }

    @Test("report=every, hold=0: a line per frame; no motion in a still scene; motion starts when a square crosses it")
    func startsWithMovement() throws {
        let r = try CVHostBinary.run(["run", "--plugin", "motion:report=every,hold=0", "--input", try MediaFixtures.motionClip(), "-q"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        let results = r.events("result")
        #expect(results.first?["seq"] as? Int == 1, "frame 0 has nothing to compare with")
        func motion(_ e: [String: Any]) -> Bool { (e["data"] as? [String: Any])?["motion"] as? Bool == true }
        let still = results.filter { ($0["seq"] as? Int ?? 0) < 29 }
        let moving = results.filter { ($0["seq"] as? Int ?? 0) > 31 && ($0["seq"] as? Int ?? 0) < 55 }
        #expect(!still.isEmpty && still.allSatisfy { !motion($0) })
        #expect(!moving.isEmpty && moving.allSatisfy(motion))
        let starts = results.filter { ($0["data"] as? [String: Any])?["started"] as? Bool == true }.compactMap { $0["seq"] as? Int }
        #expect(starts.count == 1 && (29...32).contains(starts.first ?? 0), "started at \(starts)")
    }

    @Test("it keeps the previous frame, so it refuses parallel instances: a refused option value, exit 18")
    func onlyOneInstance() throws {
        let r = try CVHostBinary.run(["run", "--plugin", "motion:instances=2", "--input", "testsrc", "--max-frames", "2"])
        #expect(r.exitCode == 18 && r.stderr.contains("needs instances=1"), "\(r.stderr)")
    }
}
