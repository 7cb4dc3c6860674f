import CVHostCore
import Glibc

/// A file a route serves (a clip, a snapshot): its open descriptor (the answer closes it), size and type.
public struct ServedFile: Sendable {
    public let descriptor: Int32
    public let size: UInt64
    public let contentType: String

    public init(descriptor: Int32, size: UInt64, contentType: String) {
        self.descriptor = descriptor
        self.size = size
        self.contentType = contentType
    }
}

/// What a request for a file's bytes is answered with, whole or the one range it asks for (RFC
/// 9110 `Range: bytes=A-B`, `A-`, `-N`): what a browser's `<video>` asks for to seek. One range a
/// request (a multipart answer of several is not served: the whole file instead, as the RFC
/// allows). The bytes themselves are not read here: `FileSender` hands them to the kernel.
enum FileRanges {
    enum Answer {
        /// An answer with no file in it (416); the file is closed.
        case reply(HTTPReply)
        /// `count` bytes of `file` from `first`, with this status (200 whole, 206 a part) and headers.
        case bytes(file: ServedFile, status: Int, first: UInt64, count: UInt64, headers: [(String, String)])
    }

    /// The answer for `file` and the request's `Range` header.
    static func answer(_ file: ServedFile, range header: String?) -> Answer {
        var first: UInt64 = 0, last = file.size == 0 ? 0 : file.size - 1
        var partial = false
        if let header, let asked = parse(header, size: file.size) {
            guard let (a, b) = asked else {
                close(file.descriptor)
                var r = HTTPReply.error(416, "the range \(header.prefix(100)) is not in the file (\(file.size) bytes)")
                r.headers.append(("Content-Range", "bytes */\(file.size)"))
                return .reply(r)
            }
            (first, last, partial) = (a, b, true)
        }
        var headers = [("Accept-Ranges", "bytes")]
        if partial { headers.append(("Content-Range", "bytes \(first)-\(last)/\(file.size)")) }
        return .bytes(file: file, status: partial ? 206 : 200, first: first, count: file.size == 0 ? 0 : last - first + 1, headers: headers)
    }

    /// The one range a `Range` header asks for: nil when it is not one this serves (then the whole
    /// file, as RFC 9110 allows), .some(nil) when none of it is in the file (416: past its end, or
    /// the last 0 bytes), else the first and last byte.
    static func parse(_ header: String, size: UInt64) -> (UInt64, UInt64)?? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        if parts[0].isEmpty {
            // The last N bytes; the last 0 is no byte of the file (RFC 9110 14.1.2: unsatisfiable).
            guard let n = UInt64(parts[1]) else { return nil }
            guard size > 0, n > 0 else { return .some(nil) }
            return .some((size - min(n, size), size - 1))
        }
        guard let a = UInt64(parts[0]) else { return nil }
        let b = parts[1].isEmpty ? nil : UInt64(parts[1])
        if !parts[1].isEmpty && b == nil { return nil }
        if let b, b < a { return nil }
        guard a < size else { return .some(nil) }
        return .some((a, min(b ?? size - 1, size - 1)))
    }
}
