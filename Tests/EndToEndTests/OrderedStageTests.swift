import CVHostTestSupport
import Foundation
import Testing

/// The ordered stage (ABI 2.1): state shared by parallel instances, applied in frame order by the host.
@Suite("ordered stage")
struct OrderedStageTests {
    @Test("with 4 instances finishing out of order, ordered() sees every frame once, in frame order; shared_flush comes last")
    func inOrder() throws {
        let folder = PluginFixtures.makeFolder()
        let plugin = try PluginFixtures.build(name: "stage", defines: ["ORDERED_STAGE"], in: folder)
        let r = try CVHostBinary.run(["run", "--plugin", plugin + ":instances=4", "--input", "testsrc:160x120:unpaced",
                                      "--max-frames", "60", "--backpressure", "block", "-q"], timeout: 60)
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        let results = r.events("result")
        let ordered = results.filter { $0["type"] as? String == "ordered" }.compactMap { $0["data"] as? [String: Any] }
        #expect(ordered.count == 60)
        #expect(ordered.map { $0["delivery_index"] as? Int } == (0..<60).map { $0 })
        #expect(ordered.allSatisfy { $0["delivery_index"] as? Int == $0["expected"] as? Int })
        #expect(Set(ordered.compactMap { $0["instance"] as? Int }).count > 1, "the frames were spread over the instances")
        let last = try #require(results.last)
        #expect(last["type"] as? String == "ordered.end" && (last["data"] as? [String: Any])?["frames"] as? Int == 60)
        #expect(last["seq"] as? Int == 59, "shared_flush's results belong to the last frame")
    }
}
