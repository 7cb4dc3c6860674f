import CVHostCore
import Foundation
import Glibc

/// A shared object read as a file, never loaded: its exported symbols, and the bytes of its
/// constant data as the dynamic loader would lay them out, with the relocations that fill in
/// pointers applied. This is how cvhost reads a plugin's descriptor without running any of its
/// code (libcamera reads an IPA module's info the same way).
///
/// ELF64, little-endian, x86-64 or AArch64. Pointers in a position-independent object's data are
/// stored in one of three ways: RELA relocations (the value is in the relocation, the data holds
/// 0: x86-64, AArch64), REL or RELR relocations (the value is in the data itself). All are read.
struct ELFImage {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private(set) var machine: UInt16 = 0
    private let bytes: Data
    private var segments: [(vaddr: UInt64, offset: UInt64, fileSize: UInt64, memorySize: UInt64)] = []
    private var symbols: [String: (address: UInt64, size: UInt64)] = [:]
    /// Pointer values at addresses with a RELA relocation: RELATIVE and absolute ones; nil for a
    /// pointer to a symbol another object defines (set, but not to anything in this file).
    private var relocated: [UInt64: UInt64?] = [:]

    static let machineX86_64: UInt16 = 62
    static let machineAArch64: UInt16 = 183
    /// The machine this cvhost was built for.
    static var hostMachine: UInt16 {
        #if arch(x86_64)
            machineX86_64
        #else
            machineAArch64
        #endif
    }

    /// Larger files are refused before they are read.
    static let maxFileSize: off_t = 1 << 30

    init(path: String) throws {
        // The path is PathText (a name that is not UTF-8 as \xNN). The file is read, not mapped:
        // a mapped file that shrinks while it is read (a plugin rebuilt meanwhile) is a SIGBUS.
        let fd = PathText.openForReading(path)
        guard fd >= 0 else { throw Failure(description: "cannot read the file: \(Errno.current.description)") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw Failure(description: "cannot read the file: it is not a regular file")
        }
        guard st.st_size <= ELFImage.maxFileSize else {
            throw Failure(description: "not a plugin: \(st.st_size >> 20) MiB, larger than any shared object cvhost reads (1 GiB)")
        }
        var data = Data(count: Int(st.st_size))
        let read = data.withUnsafeMutableBytes { SystemCall.readFully(fd, into: $0) }
        data.count = read  // a file that shrank meanwhile: what was there
        bytes = data
        guard data.count >= 64, data.prefix(4) == Data([0x7F, 0x45, 0x4C, 0x46]) else {
            throw Failure(description: "not an ELF file")
        }
        guard data[4] == 2, data[5] == 1 else { throw Failure(description: "not a 64-bit little-endian ELF file") }
        guard u16(16) == 3 else { throw Failure(description: "not a shared object (ELF type \(u16(16)))") }
        machine = u16(18)

        // Every offset and size below is the file's word: arithmetic on them wraps instead of
        // trapping, and a table is read only when it lies within the file (a file that claims a
        // table of 2^60 entries would else have cvhost loop, or allocate, for ever).
        let fileSize = UInt64(data.count)
        let phoff = u64(32), phentsize = UInt64(u16(54)), phnum = UInt64(u16(56))
        for i in 0..<phnum {
            let p = phoff &+ i &* phentsize
            guard u32(p) == 1 else { continue }  // PT_LOAD
            segments.append((vaddr: u64(p + 16), offset: u64(p + 8), fileSize: u64(p + 32), memorySize: u64(p + 40)))
        }

        // Sections: the dynamic symbol table and the relocation tables, found by type.
        let shoff = u64(40), shentsize = UInt64(u16(58)), shnum = UInt64(u16(60))
        guard shoff > 0, shnum > 0, shoff < fileSize, shnum * shentsize <= fileSize - shoff else {
            throw Failure(description: "it has no section headers")
        }
        struct Section { let type: UInt32, offset: UInt64, size: UInt64, link: UInt32, entsize: UInt64 }
        let sections = (0..<shnum).map { i -> Section in
            let s = shoff &+ i &* shentsize
            return Section(type: u32(s + 4), offset: u64(s + 24), size: u64(s + 32), link: u32(s + 40), entsize: u64(s + 56))
        }
        var dynsym: [(name: String, value: UInt64, size: UInt64, defined: Bool)] = []
        func withinFile(_ t: Section) -> Bool { t.offset <= fileSize && t.size <= fileSize - t.offset }
        if let table = sections.first(where: { $0.type == 11 }), Int(table.link) < sections.count {  // SHT_DYNSYM
            let names = sections[Int(table.link)]
            guard withinFile(table), withinFile(names) else { throw Failure(description: "its symbol table lies outside the file") }
            let entsize = max(table.entsize, 24)
            for i in 0..<(table.size / entsize) {
                let s = table.offset + i * entsize
                let name = cString(fileOffset: names.offset &+ UInt64(u32(s)), limit: names.offset + names.size) ?? ""
                dynsym.append((name: name, value: u64(s + 8), size: u64(s + 16), defined: u16(s + 6) != 0))
            }
        }
        for s in dynsym where s.defined && !s.name.isEmpty { symbols[s.name] = (s.value, s.size) }

        let (relative, absolute, globalData): (UInt32, UInt32, UInt32) =
            machine == ELFImage.machineAArch64 ? (1027, 257, 1025) : (8, 1, 6)
        for table in sections where table.type == 4 {  // SHT_RELA
            guard withinFile(table) else { throw Failure(description: "its relocation table lies outside the file") }
            let entsize = max(table.entsize, 24)
            for i in 0..<(table.size / entsize) {
                let r = table.offset + i * entsize
                let at = u64(r), info = u64(r + 8), addend = u64(r + 16)
                let type = UInt32(truncatingIfNeeded: info), symbol = Int(info >> 32)
                switch type {
                case relative:
                    relocated[at] = .some(addend)
                case absolute, globalData:
                    guard symbol < dynsym.count else { continue }
                    relocated[at] = dynsym[symbol].defined ? .some(dynsym[symbol].value &+ addend) : .some(nil)
                default:
                    continue
                }
            }
        }
    }

    /// Where a symbol this object exports is, by name.
    func symbol(_ name: String) -> (address: UInt64, size: UInt64)? { symbols[name] }

    /// The bytes at a virtual address, as loaded (zeros past a segment's file part); nil outside the image.
    func bytes(at address: UInt64, count: Int) -> [UInt8]? {
        guard count >= 0,
              let seg = segments.first(where: { address >= $0.vaddr && address - $0.vaddr <= $0.memorySize && UInt64(count) <= $0.memorySize - (address - $0.vaddr) })
        else { return nil }
        return (0..<UInt64(count)).map { i in
            let inSegment = address - seg.vaddr + i
            return inSegment < seg.fileSize ? byte(seg.offset &+ inSegment) : 0
        }
    }

    /// A value of a C struct at `address`, as the file holds it: the first `size` bytes (at most
    /// the struct's own size; the rest zero), every pointer-sized slot relocated. Pointers in it
    /// are addresses in this image, to read with `bytes(at:)` or `string(at:)`, never to follow.
    /// Pointers to other objects' symbols read as 1 (set, not here).
    func structure<T>(_ type: T.Type, at address: UInt64, size: Int) -> T? {
        let count = min(size, MemoryLayout<T>.size)
        guard var raw = bytes(at: address, count: count) else { return nil }
        for slot in stride(from: 0, through: count - 8, by: 8) {
            guard let value = relocated[address &+ UInt64(slot)] else { continue }
            withUnsafeBytes(of: (value ?? 1).littleEndian) { raw.replaceSubrange(slot..<slot + 8, with: $0) }
        }
        raw += [UInt8](repeating: 0, count: MemoryLayout<T>.size - count)
        return raw.withUnsafeBytes { $0.loadUnaligned(as: T.self) }
    }

    /// The NUL-terminated string at a virtual address (at most `limit` bytes); nil outside the image,
    /// unterminated, or not UTF-8.
    func string(at address: UInt64, limit: Int = 4096) -> String? {
        guard let seg = segments.first(where: { address >= $0.vaddr && address - $0.vaddr < $0.fileSize }) else { return nil }
        let start = seg.offset &+ (address - seg.vaddr)
        return cString(fileOffset: start, limit: min(seg.offset &+ seg.fileSize, start &+ UInt64(limit)))
    }

    // MARK: - Reading the file

    private func byte(_ offset: UInt64) -> UInt8 {
        offset < UInt64(bytes.count) ? bytes[bytes.startIndex + Int(offset)] : 0
    }

    private func u16(_ o: UInt64) -> UInt16 { UInt16(byte(o)) | UInt16(byte(o &+ 1)) << 8 }
    private func u32(_ o: UInt64) -> UInt32 { UInt32(u16(o)) | UInt32(u16(o &+ 2)) << 16 }
    private func u64(_ o: UInt64) -> UInt64 { UInt64(u32(o)) | UInt64(u32(o &+ 4)) << 32 }

    private func cString(fileOffset: UInt64, limit: UInt64) -> String? {
        let end = min(limit, UInt64(bytes.count))
        guard fileOffset < end else { return nil }
        let start = bytes.startIndex + Int(fileOffset)
        guard let nul = bytes[start..<(bytes.startIndex + Int(end))].firstIndex(of: 0) else { return nil }
        return String(validating: bytes[start..<nul], as: UTF8.self)
    }
}
