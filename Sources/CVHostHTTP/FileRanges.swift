import CVHostCore
import Glibc

/// A file a route serves (a clip, a snapshot): its open descriptor (the route closes it), size and type.
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

/// A file's bytes in answer to a request, whole or the one range it asks for (RFC 9110 `Range:
/// bytes=A-B`, `A-`, `-N`): what a browser's `<video>` asks for to seek. One range a request (a
/// multipart answer of several is not served: the whole file instead, as the RFC allows); at most
/// `maxChunk` bytes an answer (a player asks again from where it got to).
enum FileRanges {
    static let maxChunk: UInt64 = 8 << 20

    /// The answer for `file` (which it closes): 200 whole, 206 a part, 416 a range past its end.
    static func reply(_ file: ServedFile, range header: String?) -> HTTPReply {
        defer { close(file.descriptor) }
        var first: UInt64 = 0, last = file.size == 0 ? 0 : file.size - 1
        var partial = false
        if let header, let asked = parse(header, size: file.size) {
            guard let (a, b) = asked else {
                var r = HTTPReply.error(416, "the range \(header) is past the end of the file (\(file.size) bytes)")
                r.headers.append(("Content-Range", "bytes */\(file.size)"))
                return r
            }
            (first, last, partial) = (a, b, true)
        }
        if partial || last - first + 1 > maxChunk {
            // A whole file larger than a chunk is answered in parts too: a client that cannot take parts gets a clear one.
            if !partial && file.size > maxChunk { partial = true }
            last = min(last, first + maxChunk - 1)
        }
        let count = file.size == 0 ? 0 : Int(last - first + 1)
        var body = [UInt8](repeating: 0, count: count)
        let read = body.withUnsafeMutableBytes { SystemCall.readFully(file.descriptor, into: $0, at: Int(first)) }
        guard read == count else { return .error(500, "the file could not be read (\(read) of \(count) bytes)") }
        var r = HTTPReply(status: partial ? 206 : 200, contentType: file.contentType, body: body)
        r.headers.append(("Accept-Ranges", "bytes"))
        if partial { r.headers.append(("Content-Range", "bytes \(first)-\(last)/\(file.size)")) }
        return r
    }

    /// The one range a `Range` header asks for: nil when it is not one this serves (then the whole
    /// file, as RFC 9110 allows), .some(nil) when it is past the end (416), else the first and last byte.
    static func parse(_ header: String, size: UInt64) -> (UInt64, UInt64)?? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        if parts[0].isEmpty {
            // The last N bytes.
            guard let n = UInt64(parts[1]), n > 0 else { return nil }
            guard size > 0 else { return .some(nil) }
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
