import CVHostCore
import CVHostSources
import Foundation

/// What an input added over HTTP (`POST /inputs`, `PUT /inputs/NAME`) may name: `--allow-inputs`.
/// The HTTP server is reached by every local user and every page a browser opens (with no token
/// on loopback), and cvhost often runs as root: by default it takes only network cameras and
/// streams it connects to. Files (which a root cvhost reads whoever asks), cameras, and URLs that
/// make cvhost listen on a port are taken only when the run allows them. The command line, the
/// config file and stdin are the operator's own and take anything.
///
/// The check is made on the text alone, before anything is opened or looked up: its refusal is
/// the same for a file that exists and one that does not.
public struct InputPolicy: Equatable, Sendable {
    public enum Kind: String, CaseIterable, Sendable {
        /// A stream cvhost connects to: rtsp(s), http(s), rtmp(s), srt, tcp, udp and rtp, not listening.
        case network
        /// Video files, still images, folders and globs of them, named pipes.
        case files
        /// Cameras (`device`).
        case devices
        /// A URL that makes cvhost listen: `?listen=1`, `mode=listener`, a UDP port on every address.
        case listen
    }

    public private(set) var kinds: Set<Kind>
    /// Folders (real paths) from which files may be added when `files` is not allowed whole.
    public private(set) var folders: [String]

    public static let standard = InputPolicy(kinds: [.network], folders: [])

    init(kinds: Set<Kind>, folders: [String]) {
        self.kinds = kinds
        self.folders = folders
    }

    /// `network+files+devices+listen`, `all`, or folders (`/srv/clips`), `+`- or `,`-separated.
    /// - Throws: UsageError naming the word that is none of these, or a folder that is not one.
    public init(parsing text: String) throws(UsageError) {
        kinds = []
        folders = []
        for word in text.split(whereSeparator: { $0 == "+" || $0 == "," }).map({ String($0).trimmingCharacters(in: .whitespaces) }) {
            if word == "all" {
                kinds.formUnion(Kind.allCases)
            } else if let kind = Kind(rawValue: word) {
                kinds.insert(kind)
            } else if word.hasPrefix("/") {
                guard let real = Self.realPath(word), PathText.entry(real) == .folder else {
                    throw UsageError("--allow-inputs \(word): no such folder (name folders by their absolute paths)")
                }
                folders.append(real)
            } else {
                throw UsageError("--allow-inputs '\(word)': give network, files, devices, listen, all or a folder's absolute path, joined by +")
            }
        }
        if kinds.isEmpty && folders.isEmpty { throw UsageError("--allow-inputs needs at least one of network, files, devices, listen, all or a folder") }
    }

    /// The policy in the words of `--allow-inputs`.
    public var description: String {
        (Kind.allCases.filter(kinds.contains).map(\.rawValue) + folders).joined(separator: "+")
    }

    /// Why an HTTP client may not add `spec`, or nil when it may.
    public func refusal(_ spec: InputSpec) -> String? {
        let shown = spec.sourceID()
        switch spec.kind {
        case .camera, .firstCamera:
            return kinds.contains(.devices) ? nil : "a camera (device) is added over HTTP only when the run allows it (--allow-inputs devices)"
        case .input(let whole):
            let text = InputSpec.streams(whole).source
            guard let kind = Self.kind(of: text) else { return nil }
            if kinds.contains(kind) { return nil }
            switch kind {
            case .files:
                if !folders.isEmpty {
                    return Self.within(text, folders) ? nil
                        : "\(shown) is not in a folder this run takes files from over HTTP (--allow-inputs \(folders.joined(separator: "+")))"
                }
                return "\(shown) is a file, images or a folder: files are added over HTTP only when the run allows them (--allow-inputs files, or a folder)"
            case .listen:
                return "\(shown) would make cvhost listen on a port: that is added over HTTP only when the run allows it (--allow-inputs listen)"
            case .network, .devices:
                return "\(shown) is a network stream: this run takes none over HTTP (--allow-inputs network)"
            }
        }
    }

    /// What `--input` text names, from the text alone (nothing is opened or looked up); nil for
    /// the test pattern, which reads nothing.
    static func kind(of text: String) -> Kind? {
        if text == "testsrc" || text.hasPrefix("testsrc:") { return nil }
        guard let colon = text.range(of: "://"), !text[..<colon.lowerBound].isEmpty else { return .files }
        let scheme = text[..<colon.lowerBound].lowercased()
        guard StreamLocation.networkSchemes.contains(scheme) else { return .files }
        return listens(text, scheme: scheme) ? .listen : .network
    }

    /// Whether a URL makes FFmpeg listen: a `listen` option (tcp, http, rtmp), SRT's listener or
    /// rendezvous mode, RTSP's listen flag, or UDP/RTP on every address of a port of this machine.
    static func listens(_ url: String, scheme: String) -> Bool {
        let rest = url[url.range(of: "://")!.upperBound...]
        let query = rest.split(separator: "?", maxSplits: 1).dropFirst().first ?? ""
        for item in query.split(whereSeparator: { $0 == "&" || $0 == ";" }) {
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = pair[0].lowercased(), value = pair.count > 1 ? pair[1].lowercased() : ""
            if key == "listen" && value != "0" { return true }
            if key == "mode" && ["listener", "server", "rendezvous"].contains(value) { return true }
            if key == "rtsp_flags" && value.contains("listen") { return true }
        }
        if scheme == "udp" || scheme == "rtp" {
            var host = String(rest.prefix { $0 != "/" && $0 != "?" })
            if let at = host.lastIndex(of: "@") { host = String(host[host.index(after: at)...]) }
            if host.hasPrefix("[") { host = String(host.dropFirst().prefix { $0 != "]" }) } else { host = String(host.prefix { $0 != ":" }) }
            return host.isEmpty || host == "0.0.0.0" || host == "::"
        }
        return false
    }

    /// Whether the file, folder or glob `text` lies in one of `folders` (by its real path, links
    /// followed; a glob by the folder before its first wildcard).
    static func within(_ text: String, _ folders: [String]) -> Bool {
        var path = text
        if let wild = path.firstIndex(where: { "*?[".contains($0) }) {
            path = String(path[..<wild])
            path = path.hasSuffix("/") ? path : (path as NSString).deletingLastPathComponent
        }
        guard let real = realPath(path) else { return false }
        return folders.contains { real == $0 || real.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }
    }

    static func realPath(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }
}
