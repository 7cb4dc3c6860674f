import CVHostTestSupport
import Foundation
import Glibc
import Testing
import CVHostLines
@testable import CVHostOutput

/// A spool trusts nothing it finds on disk: a folder another user can change, files planted as
/// symbolic links, segment names at the end of the numbers, damage in the middle of a segment, a
/// cursor naming a segment that is not there. cvhost runs as root as a service: each of these
/// once let another user truncate or write root's files, crash-looped it, or lost lines silently.
@Suite("Brokers: the spool trusts nothing on disk")
struct SpoolTrustTests {
    static func folder() -> String { SpoolTests.folder() }
    static func segments(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".spool") }.sorted()
    }

    /// A file of root's outside the spool, with its bytes, to check it is left as it was.
    static func victim() throws -> (path: String, bytes: Data) {
        let path = NSTemporaryDirectory() + "cvhost-victim-\(UUID().uuidString)"
        let bytes = Data("root's own file\n".utf8)
        try bytes.write(to: URL(fileURLWithPath: path))
        return (path, bytes)
    }

    @Test("a folder of another user's, writable by all, with its cursor and next segment planted as links to root's files: refused, naming the owner; nothing touched",
          .enabled(if: getuid() == 0, "making a folder another user owns needs root"))
    func anotherUsersFolder() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        mkdir(dir, 0o777)
        chmod(dir, 0o777)
        chown(dir, 65534, 65534)  // nobody
        let a = try Self.victim(), b = try Self.victim()
        defer { unlink(a.path); unlink(b.path) }
        symlink(a.path, dir + "/cursor")
        symlink(b.path, dir + "/00000000000000000001.spool")
        #expect {
            _ = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
        } throws: { error in
            let text = "\(error)"
            return (error as? OutputError)?.code == .untrustedFolder && text.contains("the spool folder \(dir) belongs to another user (uid 65534)") && text.contains("chmod 700") && text.contains("spool=")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: a.path)) == a.bytes)
        #expect(try Data(contentsOf: URL(fileURLWithPath: b.path)) == b.bytes)
    }

    @Test("a folder of the user's own that its group or every user can write is refused; so is a symbolic link to a folder")
    func writableByOthers() throws {
        for mode: mode_t in [0o770, 0o707] {
            let dir = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            mkdir(dir, mode)
            chmod(dir, mode)
            #expect {
                _ = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
            } throws: { ($0 as? OutputError)?.code == .untrustedFolder && "\($0)".contains("can be written by") }
            #expect(Self.segments(dir).isEmpty && !FileManager.default.fileExists(atPath: dir + "/cursor"))
        }
        let real = Self.folder(), link = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: real); unlink(link) }
        mkdir(real, 0o700)
        symlink(real, link)
        #expect {
            _ = try Spool(folder: link, maxBytes: 1 << 20, name: "t")
        } throws: { ($0 as? OutputError)?.code == .untrustedFolder && "\($0)".contains("is not a folder (a symbolic link or a file)") }
    }

    @Test("in the user's own folder, a cursor or segment planted as a symbolic link is never followed")
    func plantedLinks() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        mkdir(dir, 0o700)
        let a = try Self.victim()
        defer { unlink(a.path) }
        symlink(a.path, dir + "/cursor")
        #expect {
            _ = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
        } throws: { "\($0)".contains("cannot use cursor in the spool folder") }
        #expect(try Data(contentsOf: URL(fileURLWithPath: a.path)) == a.bytes)
        // The next segment planted: not opened through the link, not written.
        unlink(dir + "/cursor")
        do {
            let s = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
            s.append((0..<3).map { SpoolTests.line($0) })
        }
        symlink(a.path, dir + "/00000000000000000002.spool")
        _ = try? Spool(folder: dir, maxBytes: 1 << 20, name: "t")
        #expect(try Data(contentsOf: URL(fileURLWithPath: a.path)) == a.bytes)
    }

    @Test("a segment named with the last number there is: a one-line refusal, no crash; names that are not cvhost's are left alone")
    func lastSegmentNumber() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        mkdir(dir, 0o700)
        _ = FileManager.default.createFile(atPath: dir + "/18446744073709551615.spool", contents: Data())
        #expect {
            _ = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
        } throws: { "\($0)".contains("holds a segment numbered 18446744073709551615") }
        // Past the numbers, or not 20 digits: not a segment of cvhost's, neither read nor deleted.
        unlink(dir + "/18446744073709551615.spool")
        for name in ["99999999999999999999.spool", "1.spool", "+0000000000000000001.spool"] {
            _ = FileManager.default.createFile(atPath: dir + "/" + name, contents: Data("x".utf8))
        }
        let s = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
        #expect(s.recovered == 0)
        #expect(Spool.segmentNumbers(["99999999999999999999.spool", "1.spool", "00000000000000000007.spool"]) == [7])
        #expect(FileManager.default.fileExists(atPath: dir + "/99999999999999999999.spool"))
    }

    @Test("one flipped byte in the middle of a segment costs the line it is in: the lines after it are kept, the damage counted")
    func flippedByte() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let s = try Spool(folder: dir, maxBytes: 4 << 20, name: "t")
            _ = s.append((0..<1000).map { SpoolTests.line($0) })
        }
        let path = dir + "/" + (Self.segments(dir).first ?? "")
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count / 2] ^= 0x20
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let again = try Spool(folder: dir, maxBytes: 4 << 20, name: "t")
        #expect(again.recovered == 999 && again.damaged == 1)
        var read: [(line: OutputLine, position: Spool.Position)] = []
        while case let part = again.read(max: 300), !part.isEmpty { read += part }
        let numbers = SpoolTests.numbers(read)
        #expect(numbers.count == 999 && Set(numbers).count == 999 && numbers == numbers.sorted())
    }

    @Test("a cursor naming a segment that is not there is ignored: every segment is kept and sent from its start")
    func cursorOfNoSegment() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let s = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
            _ = s.append((0..<1000).map { SpoolTests.line($0) })
        }
        let before = Self.segments(dir)
        try "v1 99 0".padding(toLength: 47, withPad: " ", startingAt: 0).appending("\n").write(toFile: dir + "/cursor", atomically: false, encoding: .utf8)
        let again = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
        #expect(again.recovered == 1000)
        #expect(Set(before).isSubset(of: Set(Self.segments(dir))))
    }

    @Test("records of any bytes: the survey counts whole records, skips damage to the next, ends at the last whole record")
    func survey() {
        var bytes: [UInt8] = []
        for n in 0..<5 { SpoolRecord.append(SpoolTests.line(n), to: &bytes) }
        let whole = SpoolRecord.survey(bytes[...])
        #expect(whole.lines == 5 && whole.damaged.isEmpty && whole.end == bytes.count)
        var garbled = [UInt8](repeating: 0x41, count: 7) + bytes + [1, 2, 3]
        garbled[7 + 60] ^= 1
        let s = SpoolRecord.survey(garbled[...])
        // The garbage before the first record and the damaged record are one stretch.
        #expect(s.lines == 4 && s.damaged.count == 1 && s.damaged[0].lowerBound == 0 && s.end == garbled.count - 3)
        #expect(SpoolRecord.survey([][...]) == SpoolRecord.Survey())
    }
}
