import CVHostTestSupport
import Foundation
import Testing

/// The motion plugin (written in Swift against the C header).
@Suite("motion plugin")
struct MotionPluginTests {
    @Test("no motion in a still scene; motion starts when a square crosses it")
    func startsWithMovement() throws {
        let r = try CVHostBinary.run(["run", "--plugin", "motion", "--input", try MediaFixtures.motionClip(), "-q"])
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

    @Test("it keeps the previous frame, so it refuses parallel instances")
    func onlyOneInstance() throws {
        let r = try CVHostBinary.run(["run", "--plugin", "motion:instances=2", "--input", "testsrc", "--max-frames", "2"])
        #expect(r.exitCode == 16 && r.stderr.contains("needs instances=1"))
    }
}
