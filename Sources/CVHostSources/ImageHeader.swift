import CVHostCore
import Foundation

/// The picture size an image file's header declares, read from its first bytes without decoding
/// it, so that a picture too large to decode safely (a few megabytes of PNG can declare 16000x16000
/// pixels: gigabytes once decoded) is refused before any memory is given to it. FFmpeg's decoders
/// also refuse it (their `max_pixels`), but only say so in their own log: this names the size.
///
/// Knows PNG, JPEG, GIF, BMP, WebP and PNM; nil for anything else (TIFF's size lies in a directory
/// anywhere in the file), which FFmpeg's limit still bounds. Also what an image file begins with
/// (`beginsLikeAnImage`) and whether it ends as one (`isCutShort`).
enum ImageHeader {
    /// Bytes read from the start of the file: enough for every header above (a JPEG's frame header
    /// follows its metadata segments, EXIF thumbnails included, which may be long).
    static let readLimit = 256 * 1024

    /// Whether the file's first bytes are those of an image format FFmpeg reads.
    static func beginsLikeAnImage(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return true }  // then FFmpeg's reason stands
        defer { try? handle.close() }
        let head = [UInt8](handle.readData(ofLength: 12))
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + magic.count && Array(head[offset..<offset + magic.count]) == magic
        }
        let pnm = head.count >= 2 && head[0] == UInt8(ascii: "P") && (UInt8(ascii: "1")...UInt8(ascii: "7")).contains(head[1])
        return starts([0x89, 0x50, 0x4E, 0x47]) || starts([0xFF, 0xD8, 0xFF]) || (starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8))
            || starts(Array("GIF8".utf8)) || starts(Array("BM".utf8)) || starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A])
            || pnm
    }

    static func size(ofFile path: String) -> (width: Int, height: Int)? {
        let fd = PathText.openForReading(path)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: readLimit)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, readLimit) }
        guard n > 0 else { return nil }
        return size(of: Array(bytes[..<n]))
    }

    /// Whether a JPEG or PNG file lacks its end (a copy or download cut short): FFmpeg decodes
    /// what is there and fills the rest with gray, saying nothing. JPEG: no end-of-image marker in
    /// its last kilobyte (some writers leave bytes after it); PNG: no IEND chunk at its end.
    static func isCutShort(_ path: String) -> Bool {
        let fd = PathText.openForReading(path)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 8)
        guard read(fd, &head, 8) == 8 else { return false }
        let end = lseek(fd, 0, SEEK_END)
        let tailSize = Int(min(end, 1024))
        guard tailSize >= 12, lseek(fd, -off_t(tailSize), SEEK_END) >= 0 else { return false }
        var tail = [UInt8](repeating: 0, count: tailSize)
        guard read(fd, &tail, tailSize) == tailSize else { return false }
        if head[0] == 0xFF && head[1] == 0xD8 {
            return !zip(tail, tail.dropFirst()).contains { $0 == 0xFF && $1 == 0xD9 }
        }
        if head[0] == 0x89 && head[1] == UInt8(ascii: "P") {
            return Array(tail.suffix(8).prefix(4)) != Array("IEND".utf8)
        }
        return false
    }

    static func size(of b: [UInt8]) -> (width: Int, height: Int)? {
        func be(_ at: Int, _ count: Int) -> Int? {
            guard at >= 0, at + count <= b.count else { return nil }
            return b[at..<at + count].reduce(0) { $0 << 8 | Int($1) }
        }
        func le(_ at: Int, _ count: Int) -> Int? {
            guard at >= 0, at + count <= b.count else { return nil }
            return b[at..<at + count].reversed().reduce(0) { $0 << 8 | Int($1) }
        }
        func starts(_ magic: String, at offset: Int = 0) -> Bool {
            let m = Array(magic.utf8)
            return b.count >= offset + m.count && Array(b[offset..<offset + m.count]) == m
        }
        if b.count >= 24 && b[0] == 0x89 && starts("PNG", at: 1) && starts("IHDR", at: 12) {
            return be(16, 4).flatMap { w in be(20, 4).map { (w, $0) } }
        }
        if starts("GIF8") { return le(6, 2).flatMap { w in le(8, 2).map { (w, $0) } } }
        if starts("BM") {
            // BITMAPINFOHEADER: a signed height (negative: rows top-down).
            guard let w = le(18, 4), let h = le(22, 4) else { return nil }
            return (abs(Int(Int32(truncatingIfNeeded: w))), abs(Int(Int32(truncatingIfNeeded: h))))
        }
        if starts("RIFF") && starts("WEBP", at: 8) {
            if starts("VP8X", at: 12) { return le(24, 3).flatMap { w in le(27, 3).map { (w + 1, $0 + 1) } } }
            if starts("VP8L", at: 12), let bits = le(21, 4) { return ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1) }
            if starts("VP8 ", at: 12) { return le(26, 2).flatMap { w in le(28, 2).map { (w & 0x3FFF, $0 & 0x3FFF) } } }
            return nil
        }
        if b.count > 3 && b[0] == 0xFF && b[1] == 0xD8 { return jpegSize(b, be) }
        if b.count > 2 && b[0] == UInt8(ascii: "P") && (UInt8(ascii: "1")...UInt8(ascii: "6")).contains(b[1]) { return pnmSize(b) }
        return nil
    }

    /// The size in a JPEG's frame header (SOF0..SOF15 but DHT, JPG and DAC), found by walking the
    /// marker segments from the start.
    private static func jpegSize(_ b: [UInt8], _ be: (Int, Int) -> Int?) -> (Int, Int)? {
        var at = 2
        while at + 4 <= b.count {
            guard b[at] == 0xFF else { return nil }
            let marker = b[at + 1]
            if marker == 0xFF { at += 1; continue }  // fill bytes
            if marker == 0xD8 || (0xD0...0xD7).contains(marker) || marker == 0x01 { at += 2; continue }
            guard let length = be(at + 2, 2), length >= 2 else { return nil }
            if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) {
                return be(at + 7, 2).flatMap { w in be(at + 5, 2).map { (w, $0) } }
            }
            if marker == 0xDA || marker == 0xD9 { return nil }  // scan data before any frame header
            at += 2 + length
        }
        return nil
    }

    /// `P1`..`P6`, white space and comments, then width and height in decimal.
    private static func pnmSize(_ b: [UInt8]) -> (Int, Int)? {
        var numbers: [Int] = []
        var at = 2
        while numbers.count < 2 && at < b.count {
            let c = b[at]
            if c == UInt8(ascii: "#") {
                while at < b.count && b[at] != UInt8(ascii: "\n") { at += 1 }
            } else if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) {
                var value = 0
                while at < b.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[at]), value < 1 << 40 {
                    value = value * 10 + Int(b[at] - UInt8(ascii: "0"))
                    at += 1
                }
                numbers.append(value)
                continue
            } else if ![UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r")].contains(c) {
                return nil
            }
            at += 1
        }
        return numbers.count == 2 ? (numbers[0], numbers[1]) : nil
    }
}
