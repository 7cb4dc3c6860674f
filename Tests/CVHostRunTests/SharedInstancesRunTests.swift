@testable import CVHostRun
import CVHostCore
import CVHostTestSupport
import Foundation
import Testing

/// One plugin's instances serving every input (SharedInstances), in a run in this process: the
/// null plugin (stateless: shared by default) on two test patterns of different sizes, each
/// result naming its input and carrying its own frame's size, each input's frames in order.
@Suite("SharedInstances in a run")
struct SharedInstancesRunTests {
    static func results(_ lines: [[String: Any]], _ source: String) -> [(seq: Int, width: Int, height: Int)] {
        lines.filter { $0["event"] as? String == "result" && $0["source"] as? String == source }.compactMap { l in
            guard let seq = l["seq"] as? Int, let data = l["data"] as? [String: Any], let w = data["width"] as? Int, let h = data["height"] as? Int
            else { return nil }
            return (seq, w, h)
        }
    }

    @Test("two inputs through two shared instances (block back-pressure: every frame): each result is of its own input's frame, every frame in order; so with share=false (a set each)", arguments: ["true", "false"])
    func twoInputs(share: String) throws {
        let settings = try RunSettings(plugins: ["null:results=1,instances=2,share=\(share)"], inputs: ["a=testsrc:160x120:unpaced", "b=testsrc:320x240:unpaced"],
                                       backpressure: .block, maxFrames: 40, metricsInterval: 0, stdinCommands: false, quiet: true)
        let (lines, code) = try HostRunTests.run(settings)
        #expect(code == 0)
        let a = Self.results(lines, "a"), b = Self.results(lines, "b")
        #expect(a.map(\.seq) == Array(0..<40) && b.map(\.seq) == Array(0..<40), "\(a.prefix(5)) \(b.prefix(5))")
        #expect(a.allSatisfy { $0.width == 160 && $0.height == 120 } && b.allSatisfy { $0.width == 320 && $0.height == 240 })
    }
}
