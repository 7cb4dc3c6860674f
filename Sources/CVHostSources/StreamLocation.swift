import CVHostCore
import Foundation

/// Where a live stream comes from: a URL (RTSP, HTTP, RTMP, SRT, UDP...), `-` for standard input,
/// or a named pipe. It knows what FFmpeg opens and what people may be shown: a password in a URL
/// is used to connect but never printed (`rtsp://user:***@host/...`).
public struct StreamLocation: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// A URL of one of `networkSchemes`.
        case network(scheme: String)
        /// `-`: a stream piped into cvhost.
        case standardInput
        /// A FIFO in the file system.
        case namedPipe
    }

    /// The URL schemes read as network streams.
    public static let networkSchemes: Set<String> = ["rtsp", "rtsps", "rtmp", "rtmps", "srt", "udp", "rtp", "tcp", "http", "https"]

    public let kind: Kind
    /// What FFmpeg opens (it may hold a password: never print it).
    let url: String
    /// The location with any password replaced by `***`: for messages, events and metrics.
    public let display: String

    /// A URL, `-` or a named pipe; nil for anything else (files, folders, globs, testsrc).
    public init?(_ spec: String) {
        if spec == "-" {
            kind = .standardInput
            url = "pipe:0"
            display = "-"
            return
        }
        if let colon = spec.range(of: "://"), !spec[..<colon.lowerBound].isEmpty {
            let scheme = spec[..<colon.lowerBound].lowercased()
            guard StreamLocation.networkSchemes.contains(scheme) else { return nil }
            kind = .network(scheme: scheme)
            url = spec
            display = PasswordRedaction.redact(spec)
            return
        }
        var info = stat()
        guard stat(spec, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else { return nil }
        kind = .namedPipe
        url = "file:" + spec
        display = spec
    }

    /// The scheme of a network URL, nil for pipes.
    public var scheme: String? {
        if case .network(let scheme) = kind { return scheme }
        return nil
    }

    /// On live protocols the end of the stream means the connection was lost (an error, or a
    /// reconnect with --reconnect); over HTTP and from pipes it is the end of the input (a
    /// recording, an HLS playlist that ends, a producer that finished).
    public var endMeansDisconnect: Bool {
        guard let scheme else { return false }
        return !["http", "https"].contains(scheme)
    }
}
