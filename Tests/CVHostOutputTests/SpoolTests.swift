import CVHostTestSupport
import Foundation
import Glibc
import Testing
import CVHostLines
@testable import CVHostOutput

/// A broker's spool on disk on its own: lines kept in order until delivered, found again by the
/// next run, a line cut short cut off, a full spool counted, one user a folder.
@Suite("Brokers: the spool on disk")
struct SpoolTests {
    static func line(_ n: Int, source: String? = "cam0") -> OutputLine {
        OutputLine(bytes: Array("{\"event\":\"result\",\"n\":\(n)}\n".utf8), route: .init(event: "result", source: source, plugin: n % 2 == 0 ? "p" : nil),
                   sequence: n % 3 == 0 ? nil : UInt64(n), eventID: "s-\(n)")
    }
    static func numbers(_ read: [(line: OutputLine, position: Spool.Position)]) -> [Int] {
        read.map { Int($0.line.eventID!.dropFirst(2))! }
    }
    static func folder() -> String { NSTemporaryDirectory() + "cvhost-spool-\(UUID().uuidString)" }

    @Test("lines come back as they went in (route, sequence, event id, bytes), in order; delivered ones are not read again by the next run")
    func roundTripAndReopen() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let s = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
            #expect(s.recovered == 0)
            s.append((0..<10).map { Self.line($0) })
            let first = s.read(max: 4)
            #expect(Self.numbers(first) == [0, 1, 2, 3])
            for (got, n) in zip(first, 0...) {
                let want = Self.line(n)
                #expect(got.line.bytes == want.bytes && got.line.route == want.route && got.line.sequence == want.sequence)
            }
            #expect(s.lineCount == 10 && s.unread == 6)
            // The first three delivered: the next run starts at the fourth.
            s.delivered(upTo: first[3].position)
            #expect(s.lineCount == 7)
        }
        let again = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
        #expect(again.recovered == 7)
        #expect(Self.numbers(again.read(max: 100)) == Array(3..<10))
        // Lines of this run follow the earlier run's.
        again.append([Self.line(10)])
        #expect(Self.numbers(again.read(max: 100)) == [10])
    }

    @Test("segments: many lines across files, each file deleted once every line in it is delivered")
    func segments() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // 64 KiB segments (the smallest): some thousand lines make several.
        let s = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
        s.append((0..<5000).map { Self.line($0) })
        let files = { (try? FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".spool") }.count) ?? 0 }
        #expect(files() > 2)
        var all: [(line: OutputLine, position: Spool.Position)] = []
        while case let part = s.read(max: 700), !part.isEmpty { all += part }
        #expect(Self.numbers(all) == Array(0..<5000))
        s.delivered(upTo: s.readPosition)
        #expect(s.lineCount == 0 && files() == 1)
    }

    @Test("a line cut short at the end (a power cut while writing) is cut off; the lines before it are kept")
    func tornTail() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let s = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
            s.append((0..<3).map { Self.line($0) })
        }
        let segment = try #require(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".spool") }.sorted().last)
        let path = dir + "/" + segment
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        truncate(path, off_t(size - 5))
        let again = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
        #expect(again.recovered == 2)
        #expect(Self.numbers(again.read(max: 10)) == [0, 1])
    }

    @Test("a full spool keeps its oldest lines and counts the newest it could not keep")
    func full() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try Spool(folder: dir, maxBytes: 64 << 10, name: "t")
        s.append((0..<3000).map { Self.line($0) })
        #expect(s.isFull && s.droppedFull > 0)
        #expect(UInt64(s.lineCount) + s.droppedFull == 3000 && s.bytes <= 64 << 10)
        let kept = Self.numbers(s.read(max: 5000))
        #expect(kept == Array(0..<kept.count))
    }

    @Test("one output a spool: a second user of the folder is refused, naming it")
    func oneUser() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
        do throws(OutputError) {
            _ = try Spool(folder: dir, maxBytes: 1 << 20, name: "t")
            Issue.record("a second spool in one folder was made")
        } catch {
            #expect(error.code == .inUse && error.description.contains(dir) && error.description.contains("in use"))
        }
        _ = s
        var st = stat()
        stat(dir, &st)
        #expect(st.st_mode & 0o777 == 0o700)
    }
}
