import CVHostLines
/// One line as a spool keeps it on disk: framed so that a line cut short (cvhost killed while
/// writing it; or, as the spool is never synced, written out only in part before the machine lost
/// power: docs/outputs.md promises survival of cvhost's death, not of the machine's) is found and cut off
/// when the spool is opened again, damage in the middle is skipped to the next whole record, and with its route and
/// event id beside its bytes, so that sending it again needs no parsing.
///
///     u32 LE   payload length
///     u32 LE   CRC-32 (IEEE) of the payload
///     payload: u8 version (1)
///              u16 LE length, bytes   event
///              u16 LE length, bytes   source   (0xFFFF: none)
///              u16 LE length, bytes   plugin   (0xFFFF: none)
///              u16 LE length, bytes   event_id (0xFFFF: none)
///              u8 1, u64 LE            seq      (u8 0: none)
///              u64 LE                  when the line was made (CLOCK_MONOTONIC ns: this boot's)
///              the line's bytes, with its newline
public enum SpoolRecord {
    static let headerSize = 8
    private static let version: UInt8 = 1
    private static let none: UInt16 = 0xFFFF
    /// A line larger than this is not spooled (no broker takes it either).
    static let largestPayload = 64 << 20

    /// The record of `line`, appended to `out`.
    static func append(_ line: OutputLine, to out: inout [UInt8]) {
        var payload: [UInt8] = [version]
        payload.reserveCapacity(line.bytes.count + 128)
        func text(_ s: String?) {
            guard let s else { return integer(none, &payload) }
            let utf8 = Array(s.utf8.prefix(0xFFFE))
            integer(UInt16(utf8.count), &payload)
            payload += utf8
        }
        text(line.route.event)
        text(line.route.source)
        text(line.route.plugin)
        text(line.eventID)
        if let seq = line.sequence {
            payload.append(1)
            integer(seq, &payload)
        } else {
            payload.append(0)
        }
        integer(line.createdNs, &payload)
        payload += line.bytes
        integer(UInt32(payload.count), &out)
        integer(CRC32.checksum(payload[...]), &out)
        out += payload
    }

    enum Decoded {
        case line(OutputLine, size: Int)
        /// The bytes end before the record does: more may come (the writer's end), or it was cut short.
        case incomplete
        /// Not a record this version wrote: damaged.
        case damaged
    }

    /// The size of the record that begins `bytes` (at least `headerSize` of them): its header and payload.
    static func size(header bytes: ArraySlice<UInt8>) -> Int {
        headerSize + Int(read(UInt32.self, bytes, at: bytes.startIndex))
    }

    /// The record at the start of `bytes`.
    static func decode(_ bytes: ArraySlice<UInt8>) -> Decoded {
        guard bytes.count >= headerSize else { return .incomplete }
        let length = Int(read(UInt32.self, bytes, at: bytes.startIndex))
        guard length > 0, length <= largestPayload + 4096 else { return .damaged }
        guard bytes.count >= headerSize + length else { return .incomplete }
        let payload = bytes[(bytes.startIndex + headerSize)..<(bytes.startIndex + headerSize + length)]
        guard CRC32.checksum(payload) == read(UInt32.self, bytes, at: bytes.startIndex + 4), payload.first == version else { return .damaged }
        var at = payload.startIndex + 1
        func text() -> String?? {
            guard at + 2 <= payload.endIndex else { return .none }
            let n = read(UInt16.self, payload, at: at)
            at += 2
            if n == none { return .some(nil) }
            guard at + Int(n) <= payload.endIndex else { return .none }
            defer { at += Int(n) }
            return .some(String(decoding: payload[at..<(at + Int(n))], as: UTF8.self))
        }
        guard let event = text(), let event, let source = text(), let plugin = text(), let eventID = text(), at < payload.endIndex
        else { return .damaged }
        var sequence: UInt64?
        at += 1
        if payload[at - 1] == 1 {
            guard at + 8 <= payload.endIndex else { return .damaged }
            sequence = read(UInt64.self, payload, at: at)
            at += 8
        }
        guard at + 8 <= payload.endIndex else { return .damaged }
        let created = read(UInt64.self, payload, at: at)
        at += 8
        let line = OutputLine(bytes: Array(payload[at...]), route: .init(event: event, source: source, plugin: plugin),
                              sequence: sequence, eventID: eventID, createdNs: created)
        return .line(line, size: headerSize + length)
    }

    /// What a segment's bytes hold, from a record's start: how many whole records, the damaged
    /// stretches between them (each skipped up to the next valid record: a record has a length
    /// and a CRC, so the next one is found again), and where the last whole record ends (what
    /// follows it is a record cut short, or damage with no record after it).
    public struct Survey: Equatable, Sendable {
        public var lines = 0
        public var damaged: [Range<Int>] = []
        public var end = 0
    }

    public static func survey(_ bytes: ArraySlice<UInt8>) -> Survey {
        var survey = Survey(end: bytes.startIndex)
        var at = bytes.startIndex
        while at < bytes.endIndex {
            if case .line(_, let size) = decode(bytes[at...]) {
                at += size
                survey.lines += 1
                survey.end = at
                continue
            }
            guard let next = nextRecord(in: bytes, after: at) else { break }
            survey.damaged.append(at..<next)
            at = next
        }
        return survey
    }

    /// The start of the first whole, valid record after `offset`, or nil.
    static func nextRecord(in bytes: ArraySlice<UInt8>, after offset: Int) -> Int? {
        var k = offset + 1
        while k + headerSize < bytes.endIndex {
            // Cheap tests first (a length that fits, the version byte), then the CRC.
            let length = Int(read(UInt32.self, bytes, at: k))
            if length > 0, length <= bytes.endIndex - k - headerSize, bytes[k + headerSize] == version,
               case .line = decode(bytes[k...]) {
                return k
            }
            k += 1
        }
        return nil
    }

    private static func integer<I: FixedWidthInteger>(_ v: I, _ out: inout [UInt8]) {
        withUnsafeBytes(of: v.littleEndian) { out += $0 }
    }

    private static func read<I: FixedWidthInteger>(_: I.Type, _ bytes: ArraySlice<UInt8>, at i: Int) -> I {
        var v: I = 0
        for k in 0..<(I.bitWidth / 8) { v |= I(bytes[i + k]) << (8 * k) }
        return v
    }
}

/// CRC-32 as zlib and Ethernet compute it (polynomial 0xEDB88320, reflected).
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { t in
            for b in bytes { c = t[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        }
        return c ^ 0xFFFF_FFFF
    }
}
