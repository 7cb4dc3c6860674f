@testable import CVHostHTTP
import CVHostCore
import CVHostTestSupport
import Glibc
import NIOCore
import NIOEmbedded
import NIOHTTP1

/// The run's side of the server, as a test gives it: fixed answers, and the control changes that
/// reached it (a refused request must not).
final class RecordingService: LiveViewService {
    private let changes = Locked<[String]>([])
    /// Files served as /clips/NAME: NAME to the path of a file of the test's.
    let clips: [String: String]

    init(clips: [String: String] = [:]) {
        self.clips = clips
    }

    func evidenceFile(_ kind: String, name: String) -> ServedFile? {
        guard kind == "clips", let path = clips[name] else { return nil }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        var st = stat()
        guard fd >= 0, fstat(fd, &st) == 0 else { return nil }
        return ServedFile(descriptor: fd, size: UInt64(st.st_size), contentType: "video/mp4")
    }

    var controlChanges: [String] { changes.withLock { $0 } }

    func metricsText() -> String { "# TYPE cvhost_build_info gauge\ncvhost_build_info{version=\"test\"} 1\n" }
    func health() -> (healthy: Bool, json: String) { (true, #"{"status":"ok"}"#) }
    func controls() -> String { #"{"sources":[]}"# }
    func control(_ body: [UInt8]) -> (status: Int, json: String) {
        changes.withLock { $0.append(String(decoding: body, as: UTF8.self)) }
        return (200, #"{"ok":true}"#)
    }
}

/// One answer as a client reads it.
struct Answer {
    var status = 0
    var headers: [String: String] = [:]
    var body = ""

    /// Parses one HTTP/1.1 response (head, and a body of Content-Length bytes or what follows).
    init(_ text: String) {
        guard let split = text.range(of: "\r\n\r\n") else { return }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        body = String(text[split.upperBound...])
    }
}

/// The server's handlers on NIOEmbedded's channels: each connection is an `EmbeddedChannel` set up
/// as the server sets up a real one (`HTTPServer.configure`), its time advanced by the test.
struct EmbeddedServer {
    let service = RecordingService()
    let router: HTTPRouter
    let limits: ConnectionLimits

    init(token: String? = nil, listenHost: String = "127.0.0.1", allowedHosts: [String] = [],
         limits: ConnectionLimits = ConnectionLimits(requestTimeout: 10, maxConnections: 16)) {
        router = HTTPRouter(access: HTTPAccess(token: token), crossSite: CrossSiteCheck(listenHost: listenHost, allowed: allowedHosts),
                            statistics: HTTPServerStatistics(), service: service, previews: [], events: EventStream(),
                            web: WebFiles(folder: PluginFixtures.packageRoot + "/Sources/CVHostHTTP/web"), inline: true)
        self.limits = limits
    }

    var statistics: HTTPServerStatistics { router.statistics }

    /// A new connection, open.
    func connect() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try HTTPServer.configure(channel, router: router, limits: limits)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 40000)).wait()
        return channel
    }

    /// Sends `raw` on `channel` and reads what the server wrote back.
    @discardableResult
    static func send(_ raw: String, on channel: EmbeddedChannel) throws -> Answer {
        try channel.writeInbound(ByteBuffer(string: raw))
        return Answer(written(channel))
    }

    /// What the server wrote on `channel` since the last read.
    static func written(_ channel: EmbeddedChannel) -> String {
        var text = ""
        while let b = try? channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: b) }
        return text
    }

    /// One request on a connection of its own: `GET path` with these header lines (Host given unless one is).
    func request(_ path: String, method: String = "GET", headers: [String] = [], body: String = "") throws -> Answer {
        let channel = try connect()
        defer { _ = try? channel.finish() }
        var lines = ["\(method) \(path) HTTP/1.1"]
        if !headers.contains(where: { $0.lowercased().hasPrefix("host:") }) { lines.append("Host: 127.0.0.1:8080") }
        lines += headers
        if !body.isEmpty || method == "POST" { lines.append("Content-Length: \(body.utf8.count)") }
        return try Self.send(lines.joined(separator: "\r\n") + "\r\n\r\n" + body, on: channel)
    }
}
