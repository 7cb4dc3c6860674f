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

    /// What an answer sends: its status, the bytes it names (read here from the file) and headers.
    static func sent(_ file: ServedFile, range: String?) -> (status: Int, body: [UInt8], headers: [(String, String)]) {
        switch FileRanges.answer(file, range: range) {
        case .reply(let r): return (r.status, r.body, r.headers)
        case .bytes(let f, let status, let first, let count, let headers):
            defer { close(f.descriptor) }
            var body = [UInt8](repeating: 0, count: Int(count))
            _ = body.withUnsafeMutableBytes { pread(f.descriptor, $0.baseAddress, $0.count, off_t(first)) }
            return (status, body, headers)
        }
    }

    @Test("Range: bytes=A-B, A-, -N are 206 with Content-Range; none is 200 whole; past the end and the last 0 bytes are 416; what this does not serve (several ranges, words) is the whole file")
    func ranges() throws {
        let bytes = (0..<1000).map { UInt8($0 % 251) }
        let whole = Self.sent(try Self.file(bytes), range: nil)
        #expect(whole.status == 200 && whole.body == bytes && whole.headers.contains { $0 == ("Accept-Ranges", "bytes") })
        for (header, first, last) in [("bytes=0-99", 0, 99), ("bytes=900-", 900, 999), ("bytes=-10", 990, 999), ("bytes=500-5000", 500, 999)] {
            let r = Self.sent(try Self.file(bytes), range: header)
            #expect(r.status == 206 && r.body == Array(bytes[first...last]), "\(header)")
            #expect(r.headers.contains { $0 == ("Content-Range", "bytes \(first)-\(last)/1000") }, "\(header): \(r.headers)")
        }
        for header in ["bytes=1000-", "bytes=-0"] {
            let past = Self.sent(try Self.file(bytes), range: header)
            #expect(past.status == 416 && past.headers.contains { $0 == ("Content-Range", "bytes */1000") }, "\(header)")
        }
        for header in ["bytes=0-1,5-9", "items=0-5", "bytes=9-3", "bytes=x-"] {
            #expect(Self.sent(try Self.file(bytes), range: header).status == 200, "\(header)")
        }
    }
}
