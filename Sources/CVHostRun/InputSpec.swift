import CVHostCore
import CVHostSources
import Foundation

/// One input of a run as the command line gives it: `--input [NAME=]SOURCE[,record=URL]` or
/// `--device [NAME=]PATH`, or no input at all (the first camera). `record=` is a network camera's
/// second stream, its clips (and `from=record` snapshots) are taken from (RecordStream): plugins,
/// motion and the live view read SOURCE (its sub-stream).
///
/// Its `sourceID` is the `source` of every line that belongs to it: the name given, or else the
/// input as written (a URL without its password) or the camera's path.
public struct InputSpec: Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        /// `--input`: a file, images, a stream or the test pattern (InputResolver).
        case input(String)
        /// `--device`: a V4L2 camera by path.
        case camera(String)
        /// Neither was given: the first camera found.
        case firstCamera
    }

    public let kind: Kind
    /// The name given before `=`, if any.
    public let name: String?

    public init(kind: Kind, name: String?) {
        self.kind = kind
        self.name = name
    }

    /// The `source` of this input's lines. For the first camera, the path found when it is opened.
    public func sourceID(cameraPath: String? = nil) -> String {
        if let name { return name }
        switch kind {
        case .input(let text): return PasswordRedaction.redact(Self.streams(text).source)
        case .camera(let path): return path
        case .firstCamera: return cameraPath ?? "camera"
        }
    }

    public var isCamera: Bool { if case .input = kind { false } else { true } }

    /// The input is standard input (`-`): stdin carries video, not commands.
    public var readsStandardInput: Bool { if case .input("-") = kind { true } else { false } }

    /// Whether --reconnect means something for it: a camera or a network stream (not a file or a pipe).
    public var canReconnect: Bool {
        if case .input(let text) = kind { return StreamLocation(Self.streams(text).source)?.scheme != nil }
        return true
    }

    /// What separates an input's stream from the stream its clips are recorded from.
    static let recordPart = ",record="

    /// An input's text as the stream plugins read and the one clips are recorded from (`,record=URL`
    /// at its end), if any.
    public static func streams(_ text: String) -> (source: String, record: String?) {
        guard let r = text.range(of: recordPart, options: .backwards) else { return (text, nil) }
        return (String(text[..<r.lowerBound]), String(text[r.upperBound...]))
    }

    /// The stream its clips are recorded from (`record=`), if any.
    public var record: String? {
        if case .input(let text) = kind { return Self.streams(text).record }
        return nil
    }

    /// An input's text as it may be shown: each stream's password and query values as ***.
    public static func shown(_ text: String) -> String {
        let (source, record) = streams(text)
        return PasswordRedaction.redact(source) + (record.map { recordPart + PasswordRedaction.redact($0) } ?? "")
    }

    /// Why an input's text cannot be read as it is written (`record=` with what it does not go
    /// with), or nil when it can.
    public static func problem(_ text: String) -> String? {
        let (source, record) = streams(text)
        guard let record else { return nil }
        guard StreamLocation(record)?.scheme != nil else {
            return "record= is the camera's stream to record clips from, a URL (rtsp://cam/main), not '\(PasswordRedaction.redact(record))'"
        }
        guard StreamLocation(source)?.scheme != nil else {
            return "record= goes with a network camera's stream (rtsp://cam/sub,record=rtsp://cam/main): the two are matched by the "
                + "time they arrive, which '\(PasswordRedaction.redact(source))' has none of"
        }
        return nil
    }

    /// Splits `NAME=` off `text`. A name is 1 to 64 letters, digits, `_`, `-` or `.` before the
    /// first `=`, so URLs (`rtsp://h/p?a=b`) and paths (`./a=b.mp4`) are never cut; an existing
    /// file whose name looks like `a=b` is read as that file.
    static func splitName(_ text: String) -> (name: String?, rest: String) {
        guard let eq = text.firstIndex(of: "="), PathText.entry(text) == nil else { return (nil, text) }
        let name = String(text[..<eq])
        guard isName(name) else { return (nil, text) }
        return (name, String(text[text.index(after: eq)...]))
    }

    /// An input's name: 1 to 64 letters, digits, `_`, `-` or `.`.
    static func isName(_ name: String) -> Bool {
        let allowed = name.utf8.allSatisfy { c in
            (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
                || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
                || c == UInt8(ascii: ".")
        }
        return !name.isEmpty && name.utf8.count <= 64 && allowed
    }

    /// The inputs of `--input` and `--device` flags (inputs first, each in the order given), or
    /// the first camera when there are none.
    /// - Throws: UsageError for an empty input, two inputs with one source id, or stdin twice.
    public static func parse(inputs: [String], devices: [String]) throws(UsageError) -> [InputSpec] {
        var specs: [InputSpec] = []
        for (flag, texts) in [("--input", inputs), ("--device", devices)] {
            for text in texts {
                let (name, rest) = splitName(text)
                guard !rest.isEmpty else { throw UsageError("\(flag) \(text): give what to read after the name, e.g. \(flag) gate=...") }
                if flag == "--input", let why = problem(rest) { throw UsageError("--input \(shown(text)): \(why)") }
                specs.append(InputSpec(kind: flag == "--input" ? .input(rest) : .camera(rest), name: name))
            }
        }
        if specs.isEmpty { return [InputSpec(kind: .firstCamera, name: nil)] }
        if specs.filter({ $0.kind == .input("-") }).count > 1 {
            throw UsageError("standard input (-) can be read by one --input only")
        }
        var seen: Set<String> = []
        for spec in specs where !seen.insert(spec.sourceID()).inserted {
            throw UsageError("two inputs are called '\(spec.sourceID())': give each its own name, e.g. --input gate=...")
        }
        return specs
    }
}
