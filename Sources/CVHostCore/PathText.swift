import Glibc

/// A Linux path is bytes, which need not be UTF-8; a Swift String (and so CommandLine.arguments
/// and FileManager) repairs bytes that are not UTF-8 to U+FFFD, after which the path names no
/// file. cvhost carries such a path as text that says every byte: each byte that is not part of
/// UTF-8 is written `\xNN` and a backslash `\\` (`shots/caf\xe9.png`); a path that is UTF-8 is
/// written as it is. That text is what cvhost's output calls the file, and a user may give it
/// back (on the command line or in a config file) to name the same file.
public enum PathText {
    /// The text of a path's bytes.
    public static func text(_ bytes: some Collection<UInt8>) -> String {
        if let valid = String(validating: bytes, as: UTF8.self) { return valid }
        var text = ""
        var rest = Array(bytes)[...]
        while !rest.isEmpty {
            let length = validSequenceLength(rest)
            if length == 0 {
                text += Unicode.Scalar.escaped(rest.first!)
                rest = rest.dropFirst()
            } else {
                let character = String(decoding: rest.prefix(length), as: UTF8.self)
                text += character == "\\" ? "\\\\" : character
                rest = rest.dropFirst(length)
            }
        }
        return text
    }

    /// The text of a C string's bytes (an argument in argv, a path glob(3) found).
    public static func text(cString: UnsafePointer<CChar>) -> String {
        text(UnsafeRawBufferPointer(start: cString, count: strlen(cString)))
    }

    /// The bytes that `text` names on the file system: the escaped bytes when `text` is the text
    /// of a path that is not UTF-8 (and no file is literally called `text`), else its UTF-8.
    public static func fileSystemBytes(_ text: String) -> [UInt8] {
        if let bytes = unescaped(text), !exists(Array(text.utf8)) { return bytes }
        return Array(text.utf8)
    }

    /// What a path names, or nil when nothing is there.
    public enum Entry { case file, folder }

    public static func entry(_ text: String) -> Entry? {
        var info = stat()
        guard withCString(fileSystemBytes(text), { stat($0, &info) }) == 0 else { return nil }
        return info.st_mode & S_IFMT == S_IFDIR ? .folder : .file
    }

    public static func isReadable(_ text: String) -> Bool {
        withCString(fileSystemBytes(text)) { access($0, R_OK) } == 0
    }

    /// The paths (as text) of what the folder `text` holds, or nil when it cannot be read.
    public static func contents(ofFolder text: String) -> [String]? {
        let folder = fileSystemBytes(text)
        guard let dir = withCString(folder, { opendir($0) }) else { return nil }
        defer { closedir(dir) }
        var paths: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if name == [0x2E] || name == [0x2E, 0x2E] { continue }
            let joined = folder.last == 0x2F ? folder + name : folder + [0x2F] + name
            paths.append(self.text(joined))
        }
        return paths
    }

    /// Calls `body` with the C path of the file `text` names (for stat, open, dlopen...).
    public static func withFileSystemPath<R>(_ text: String, _ body: (UnsafePointer<CChar>) -> R) -> R {
        withCString(fileSystemBytes(text), body)
    }

    /// Opens the file `text` names for reading (close-on-exec), or returns -1 with errno set.
    public static func openForReading(_ text: String) -> Int32 {
        withCString(fileSystemBytes(text)) { open($0, O_RDONLY | O_CLOEXEC) }
    }

    /// The paths (as text) that the glob `pattern` matches, in glob's order.
    public static func glob(_ pattern: String) -> [String] {
        var g = glob_t()
        defer { globfree(&g) }
        guard withCString(fileSystemBytes(pattern), { Glibc.glob($0, 0, nil, &g) }) == 0 else { return [] }
        return (0..<Int(g.gl_pathc)).compactMap { i in g.gl_pathv[i].map { text(cString: $0) } }
    }

    /// The bytes of `text` read as escapes, when it is the text of bytes that are not UTF-8.
    static func unescaped(_ text: String) -> [UInt8]? {
        guard text.utf8.contains(UInt8(ascii: "\\")) else { return nil }
        var bytes: [UInt8] = []
        var utf8 = text.utf8[...]
        while let c = utf8.popFirst() {
            guard c == UInt8(ascii: "\\") else { bytes.append(c); continue }
            switch utf8.popFirst() {
            case UInt8(ascii: "\\"): bytes.append(c)
            case UInt8(ascii: "x"):
                guard utf8.count >= 2, let byte = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) else { return nil }
                bytes.append(byte)
                utf8 = utf8.dropFirst(2)
            default: return nil
            }
        }
        // Only the text cvhost writes for such bytes names them: "a\\b" or "\x41" name themselves.
        return String(validating: bytes, as: UTF8.self) == nil && self.text(bytes) == text ? bytes : nil
    }

    /// How many bytes the UTF-8 sequence at the start of `bytes` takes, or 0 when it is not one.
    private static func validSequenceLength(_ bytes: ArraySlice<UInt8>) -> Int {
        for length in 1...min(4, bytes.count) where String(validating: bytes.prefix(length), as: UTF8.self) != nil {
            return length
        }
        return 0
    }

    private static func exists(_ bytes: [UInt8]) -> Bool {
        var info = stat()
        return withCString(bytes) { lstat($0, &info) } == 0
    }

    private static func withCString<R>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) -> R) -> R {
        (bytes + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }

    /// `path` made absolute against the folder this process runs in (a worker started elsewhere
    /// must be given paths that do not depend on the folder it runs in).
    public static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        guard let cwd = getcwd(nil, 0) else { return path }
        defer { free(cwd) }
        return text(cString: cwd) + "/" + path
    }
}
