import CVHostPlugins
import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostRun

/// The exit codes, a contract with scripts: one table, from which --help says them and against
/// which docs/running.md's table is checked.
@Suite("ExitCodes: one table")
struct ExitCodesTests {
    @Test("each code once, in order; every plugin refusal's code among them")
    func table() {
        let codes = ExitCodes.table.map(\.code)
        #expect(codes == codes.sorted() && Set(codes).count == codes.count, "\(codes)")
        for kind in PluginLoadError.Kind.allCases { #expect(codes.contains(kind.exitCode), "\(kind)") }
        for code in [ExitCodes.inputUnavailable, ExitCodes.outOfResources, ExitCodes.nothingFound, ExitCodes.usage] { #expect(codes.contains(code)) }
    }

    @Test("--help's EXIT CODES: every code, a line under 80 columns")
    func help() {
        let lines = ExitCodes.helpText.split(separator: "\n")
        #expect(lines.first == "EXIT CODES" && lines.allSatisfy { $0.count < 80 }, "\(lines.filter { $0.count >= 80 })")
        for (code, _) in ExitCodes.table { #expect(lines.contains { $0.hasPrefix("  \(code) ") }, "\(code)") }
        #expect(ExitCodes.helpText.contains("  13   plugin ABI version mismatch"))
    }

    @Test("docs/running.md's table has the same codes")
    func documented() throws {
        let text = try String(contentsOfFile: PluginFixtures.packageRoot + "/docs/running.md", encoding: .utf8)
        let section = try #require(text.components(separatedBy: "## Exit codes").last)
        let codes = section.split(separator: "\n").compactMap { line -> Int32? in
            guard line.hasPrefix("| ") else { return nil }
            return Int32(line.dropFirst(2).prefix { $0 != " " })
        }
        #expect(codes == ExitCodes.table.map(\.code), "docs: \(codes)")
    }
}
