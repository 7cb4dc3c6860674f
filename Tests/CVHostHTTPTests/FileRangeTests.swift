import CVHostTestSupport
import Foundation
import Glibc
import Testing
@testable import CVHostHTTP

/// A clip or snapshot served in the ranges a browser's `<video>` asks for (RFC 9110).
@Suite("Files served in ranges")
struct FileRangeTests {
    static func file(_ bytes: [UInt8]) throws -> ServedFile {
        let path = TestFolders.make("ranges") + "/f.bin"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY)
        #expect(fd >= 0)
        return ServedFile(descriptor: fd, size: UInt64(bytes.count), contentType: "video/mp4")
    }

    @Test("Range: bytes=A-B, A-, -N are 206 with Content-Range; none is 200 whole; past the end is 416; what this does not serve (several ranges, words) is the whole file")
    func ranges() throws {
        let bytes = (0..<1000).map { UInt8($0 % 251) }
        let whole = FileRanges.reply(try Self.file(bytes), range: nil)
        #expect(whole.status == 200 && whole.body == bytes && whole.headers.contains { $0 == ("Accept-Ranges", "bytes") })
        for (header, first, last) in [("bytes=0-99", 0, 99), ("bytes=900-", 900, 999), ("bytes=-10", 990, 999), ("bytes=500-5000", 500, 999)] {
            let r = FileRanges.reply(try Self.file(bytes), range: header)
            #expect(r.status == 206 && r.body == Array(bytes[first...last]), "\(header)")
            #expect(r.headers.contains { $0 == ("Content-Range", "bytes \(first)-\(last)/1000") }, "\(header): \(r.headers)")
        }
        let past = FileRanges.reply(try Self.file(bytes), range: "bytes=1000-")
        #expect(past.status == 416 && past.headers.contains { $0 == ("Content-Range", "bytes */1000") })
        for header in ["bytes=0-1,5-9", "items=0-5", "bytes=9-3", "bytes=x-"] {
            #expect(FileRanges.reply(try Self.file(bytes), range: header).status == 200, "\(header)")
        }
    }

    @Test("a file larger than a chunk is answered a chunk at a time (206), from where it is asked")
    func chunks() throws {
        let size = Int(FileRanges.maxChunk) + 1000
        let bytes = [UInt8](repeating: 7, count: size)
        let first = FileRanges.reply(try Self.file(bytes), range: nil)
        #expect(first.status == 206 && first.body.count == Int(FileRanges.maxChunk))
        #expect(first.headers.contains { $0 == ("Content-Range", "bytes 0-\(FileRanges.maxChunk - 1)/\(size)") })
        let rest = FileRanges.reply(try Self.file(bytes), range: "bytes=\(FileRanges.maxChunk)-")
        #expect(rest.status == 206 && rest.body.count == 1000)
    }
}
