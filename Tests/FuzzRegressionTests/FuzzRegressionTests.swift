import CVHostFuzzTargets
import CVHostTestSupport
import Foundation
import Testing

/// Every seed (fuzz/corpus/TARGET) and every finding of a fuzz run (fuzz/findings/TARGET: the
/// inputs that crashed, hung or broke a promise, kept after the fix) through its target, as
/// libFuzzer ran it: a fixed finding that comes back fails here, without a fuzz build.
@Suite("fuzz seeds and findings")
struct FuzzRegressionTests {
    @Test("each target's seeds and findings pass", arguments: FuzzTarget.allCases)
    func replay(target: FuzzTarget) throws {
        var inputs = 0
        for folder in ["corpus", "findings"] {
            let dir = PluginFixtures.packageRoot + "/fuzz/\(folder)/\(target.rawValue)"
            for name in (try? FileManager.default.contentsOfDirectory(atPath: dir))?.sorted() ?? [] {
                let data = try #require(FileManager.default.contents(atPath: dir + "/" + name))
                target.run([UInt8](data))
                inputs += 1
            }
        }
        #expect(inputs > 0, "fuzz/corpus/\(target.rawValue) holds the target's seeds")
    }
}
