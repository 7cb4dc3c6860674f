import CVHostTestSupport
import Foundation
import Testing

/// The plugin ABI from Rust: examples/rust-plugin, built with cargo (no crates), loaded by path.
/// Where cargo is, if anywhere.
enum Cargo {
    static let path: String? = ["/usr/local/cargo/bin/cargo", "/usr/bin/cargo", NSHomeDirectory() + "/.cargo/bin/cargo"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
}

// Skipped, with its reason, where no cargo is, also under CI: the example needs Rust 1.77 (C string
// literals, offset_of!), and Debian 12 packages 1.63, so no install step of the project can bring it.
@Suite("example plugin in Rust", .enabled(if: Cargo.path != nil, "cargo is not installed"))
struct RustPluginTests {
    @Test("builds against the header's layout and runs in cvhost")
    func histogram() throws {
        let target = PluginFixtures.makeFolder()
        try Tool.check(Cargo.path!, ["build", "--release", "--offline", "-q", "--manifest-path",
                                     PluginFixtures.packageRoot + "/examples/rust-plugin/Cargo.toml"],
                       environment: ["CARGO_TARGET_DIR": target])
        let r = try CVHostBinary.run(["run", "--plugin", target + "/release/libcvhost_histogram.so:step=8",
                                      "--input", "testsrc:unpaced", "--max-frames", "5", "-q"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        let data = r.events("result").compactMap { $0["data"] as? [String: Any] }
        #expect(data.count == 5)
        // 640x480 sampled every 8th pixel both ways: 80 x 60 samples in the 16 bins.
        #expect(data.allSatisfy { ($0["bins"] as? [Int])?.reduce(0, +) == 80 * 60 })
    }
}
