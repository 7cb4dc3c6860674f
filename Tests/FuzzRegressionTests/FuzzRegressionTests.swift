import CVHostFuzzTargets
import CVHostTestSupport
import Foundation
import Testing

/// Every seed (fuzz/corpus/TARGET) and every finding of a fuzz run (fuzz/findings/TARGET: the
/// inputs that crashed, hung or broke a promise, kept after the fix) through its target, as
/// libFuzzer ran it, without a fuzz build: a fixed finding that comes back fails here. Each target
/// runs in its own process (the plain build's `cvhost-fuzz TARGET FILE...`), so that a finding
/// that traps again fails its test, not the whole test run.
@Suite("fuzz seeds and findings")
struct FuzzRegressionTests {
    static let replay = (CVHostBinary.path as NSString).deletingLastPathComponent + "/cvhost-fuzz"

    @Test("each target's seeds and findings pass", arguments: FuzzTarget.allCases)
    func replay(target: FuzzTarget) throws {
        var files: [String] = []
        for folder in ["corpus", "findings"] {
            let dir = PluginFixtures.packageRoot + "/fuzz/\(folder)/\(target.rawValue)"
            files += ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted().map { dir + "/" + $0 }
        }
        #expect(!files.isEmpty, "fuzz/corpus/\(target.rawValue) holds the target's seeds")
        let r = try Tool.run(Self.replay, [target.rawValue] + files)
        #expect(r.status == 0, "\(target.rawValue): exit \(r.status)\n\(r.output.suffix(3000))")
        #expect(r.output.components(separatedBy: ": passed\n").count - 1 == files.count, "\(r.output.suffix(1000))")
    }
}
