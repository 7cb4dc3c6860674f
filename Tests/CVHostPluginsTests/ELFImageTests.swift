import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostPlugins

/// Reading a plugin file someone else wrote: whatever its headers say, reading ends (refused or
/// read) without a trap, a loop that does not end, or an allocation the file cannot back.
@Suite("ELF image of a plugin file", .serialized)
struct ELFImageTests {
    static let folder = PluginFixtures.makeFolder()

    static func plugin() throws -> Data {
        try PluginFixtures.build(name: "sound", in: folder)
        return try Data(contentsOf: URL(fileURLWithPath: folder + "/libcvhost-sound.so"))
    }

    static func u64(_ d: Data, _ at: Int) -> UInt64 { d[at..<at + 8].withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } }
    static func u16(_ d: Data, _ at: Int) -> Int { Int(d[at]) | Int(d[at + 1]) << 8 }
    static func put(_ d: inout Data, _ at: Int, _ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { d.replaceSubrange(at..<at + 8, with: $0) } }

    @Test("a file of more than 1 GiB is refused before it is read")
    func hugeFile() throws {
        let path = Self.folder + "/libcvhost-vast.so"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(fd >= 0 && ftruncate(fd, (1 << 30) + 1) == 0)  // sparse: no disk taken
        close(fd)
        defer { unlink(path) }
        do {
            _ = try ELFImage(path: path)
            Issue.record("a file of more than 1 GiB was read")
        } catch {
            #expect("\(error)".contains("larger than any shared object cvhost reads"), "\(error)")
        }
    }

    @Test("a symbol or relocation table that claims more than the file holds is refused at once (exit 11)")
    func hugeTables() throws {
        let good = try Self.plugin()
        let shoff = Int(Self.u64(good, 40)), shentsize = Self.u16(good, 58), shnum = Self.u16(good, 60)
        for type: UInt32 in [11, 4] {  // SHT_DYNSYM, SHT_RELA
            for (field, value): (Int, UInt64) in [(32, 1 << 60), (24, UInt64.max - 8), (32, UInt64.max)] {  // sh_size, sh_offset
                var d = good
                let section = try #require((0..<shnum).map { shoff + $0 * shentsize }.first { d[$0 + 4..<$0 + 8].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) } == type })
                Self.put(&d, section + field, value)
                let path = Self.folder + "/libcvhost-huge\(type)-\(field)-\(value % 1000).so"
                try d.write(to: URL(fileURLWithPath: path))
                #expect(throws: PluginLoadError.self) { _ = try PluginInfo(path: path) }
            }
        }
    }

    @Test("300 copies with bytes changed in the ELF, program and section headers: each is read or refused, none traps or hangs",
          .timeLimit(.minutes(2)))
    func mutatedHeaders() throws {
        let good = try Self.plugin()
        let phoff = Int(Self.u64(good, 32)), phnum = Self.u16(good, 56)
        let shoff = Int(Self.u64(good, 40)), shnum = Self.u16(good, 60)
        let regions = [0..<64, phoff..<(phoff + phnum * 56), shoff..<min(good.count, shoff + shnum * 64)]
        var rng = SplitMix(seed: 31)
        var refused = 0
        for i in 0..<300 {
            var d = good
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let region = regions[Int(rng.next() % UInt64(regions.count))]
                let at = region.lowerBound + Int(rng.next() % UInt64(region.count))
                // A random byte, or one that makes a size or offset huge.
                d[at] = rng.next() % 3 == 0 ? 0xFF : UInt8(truncatingIfNeeded: rng.next())
            }
            let path = Self.folder + "/libcvhost-mutant\(i).so"
            try d.write(to: URL(fileURLWithPath: path))
            do { _ = try PluginInfo(path: path) } catch { refused += 1 }
            try? FileManager.default.removeItem(atPath: path)
        }
        #expect(refused > 0)
    }
}

/// A small seeded generator: the same mutants on every run.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
