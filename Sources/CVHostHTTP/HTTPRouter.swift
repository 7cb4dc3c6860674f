import CVHostCore
import CVHostLines
import Dispatch
import Foundation
import NIOCore
import NIOHTTP1

/// The routes of `--http` (docs/http-and-live-view.md lists them for users):
///
///     GET  /              the page (web/index.html, view.js, view.css; no token needed)
///     GET  /stream.mjpg   the live picture, multipart/x-mixed-replace of JPEGs (?source=ID)
///     GET  /snapshot.jpg  the newest picture (?source=ID)
///     GET  /events        the JSON lines as Server-Sent Events
///     GET  /metrics       Prometheus text exposition
///     GET  /controls      what can be changed while running
///     POST /controls      change it (a JSON command)
///     GET  /inputs        the inputs, their plugins and health
///     POST /inputs        add one (a JSON object: name, input or device, plugins)
///     GET, PUT, DELETE /inputs/NAME   one input: see it, change it (opened anew), remove it
///     GET  /analytics     every track, zone and line, and what each counted
///     POST /analytics/reset   counts back to 0 (a JSON object, each optional: source, line or zone)
///     PUT, DELETE /zones/NAME, /lines/NAME, /tracks/PLUGIN, /masks/NAME, /filters/LABEL   set one (a JSON object), remove it
///     GET  /healthz       200 while frames flow, else 503 (no token needed)
///     GET  /clips         the clips kept (--clips), newest first (?source=ID&event=KIND&label=L&since=UNIX&limit=N)
///     GET  /clips/NAME    one clip (video/mp4), whole or the range asked for (Range: bytes=A-B), sent from the file (FileSender)
///     GET  /snapshots     the snapshots kept (--snapshots), as /clips
///     GET  /snapshots/NAME one snapshot (image/jpeg)
///     GET  /history       the events kept (--events-db), newest first, paged
///                         (?source=&event=&line=&zone=&label=&track=&since=&until=&before=&limit=)
///
/// Before a route: `CrossSiteCheck` (the web pages a browser shows), then `HTTPAccess` (the
/// token); each refusal is counted in `statistics`.
///
/// The event loop never waits: answers that ask the run (health, metrics, controls) or take
/// time (a snapshot's encoding, a camera's ioctl) are made on queues of their own, one per kind,
/// so that a slow or stuck one (a camera's ioctl) delays no other kind and no other client.
final class HTTPRouter: Sendable {
    let access: HTTPAccess
    let crossSite: CrossSiteCheck
    let statistics: HTTPServerStatistics
    let service: LiveViewService
    /// The inputs' previews: an input added while the run goes on brings its own (`HTTPServer.add`).
    let previews: Locked<[LivePreview]>
    let events: EventStream
    let web: WebFiles
    let limits: ConnectionLimits
    private let health = DispatchQueue(label: "cvhost.http.health")
    private let metrics = DispatchQueue(label: "cvhost.http.metrics")
    private let work = DispatchQueue(label: "cvhost.http.work")
    /// Inputs added, changed and removed: opening a stream or draining a plugin takes seconds, so
    /// each goes on by itself (concurrent): an add that waits for a camera holds back no removal
    /// of another input. Changes of one name are kept apart by the run's registry (RunInputs).
    private let inputChanges = DispatchQueue(label: "cvhost.http.inputs", attributes: .concurrent)
    /// Zones, lines and tracks set and removed: quick, and in the order they came.
    private let changes = DispatchQueue(label: "cvhost.http.changes")
    /// Answers made on the calling thread (tests on NIOEmbedded's one-thread channel), not on the queues.
    private let inline: Bool

    /// What a request became: an answer (the connection may then carry the next request) or a
    /// stream that lasts as long as the connection.
    enum Handling: Equatable { case reply, stream }

    init(access: HTTPAccess, crossSite: CrossSiteCheck, statistics: HTTPServerStatistics, service: LiveViewService,
         previews: [LivePreview], events: EventStream, web: WebFiles, limits: ConnectionLimits = ConnectionLimits(), inline: Bool = false) {
        self.access = access
        self.crossSite = crossSite
        self.statistics = statistics
        self.service = service
        self.previews = Locked(previews)
        self.events = events
        self.web = web
        self.limits = limits
        self.inline = inline
    }

    /// Called on the event loop with a whole request.
    @discardableResult
    func handle(_ head: HTTPRequestHead, body: [UInt8], channel: Channel) -> Handling {
        let components = URLComponents(string: head.uri)
        let path = components?.percentEncodedPath ?? head.uri
        var query: [String: String] = [:]
        for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
        let respond: @Sendable (HTTPReply) -> Void = { reply in Self.send(reply, to: head, on: channel) }

        if let refusal = crossSite.refusal(head) {
            statistics.count(refusal.reason)
            respond(.error(refusal.status, refusal.message))
            return .reply
        }
        guard access.allows(path: path, query: query, headers: head.headers) else {
            statistics.count(.token)
            var r = HTTPReply.error(401, "this route wants the server's token: Authorization: Bearer TOKEN, or ?token=TOKEN")
            r.headers.append(("WWW-Authenticate", "Bearer realm=\"cvhost\""))
            respond(r)
            return .reply
        }
        switch (head.method, path) {
        case (.GET, "/healthz"):
            answer(on: health) { [service] in
                let h = service.health()
                respond(.json(h.healthy ? 200 : 503, h.json))
            }
        case (.GET, "/metrics"):
            answer(on: metrics) { [service] in
                respond(HTTPReply(status: 200, contentType: PrometheusExposition.contentType, body: Array(service.metricsText().utf8)))
            }
        case (.GET, "/controls"):
            answer(on: work) { [service] in respond(.json(200, service.controls())) }
        case (.POST, "/controls"):
            answer(on: work) { [service] in
                let answer = service.control(body)
                respond(.json(answer.status, answer.json))
            }
        case (.GET, "/inputs"), (.POST, "/inputs"):
            let command = head.method == .GET ? "get_inputs" : "add_input"
            forward(command, target: nil, body: body, on: head.method == .GET ? work : inputChanges, respond)
        case (let method, _) where path.hasPrefix("/inputs/") && [.GET, .PUT, .DELETE].contains(method):
            let target = String(path.dropFirst("/inputs/".count)).removingPercentEncoding ?? ""
            let command = head.method == .GET ? "get_inputs" : head.method == .PUT ? "change_input" : "remove_input"
            forward(command, target: target, body: body, on: head.method == .GET ? work : inputChanges, respond)
        case (.GET, "/fleet"):
            answer(on: work) { [service] in
                let answer = service.fleet() ?? (404, #"{"error":"this cvhost is in no site (cvhost run --fleet)"}"#)
                respond(.json(answer.status, answer.json))
            }
        case (.GET, "/analytics"):
            forward("get_analytics", target: nil, body: body, on: work, respond)
        case (.POST, "/analytics/reset"):
            forward("reset_counts", target: nil, body: body, on: changes, respond)
        case (let method, _) where (method == .PUT || method == .DELETE) && Self.analyticsKind(path) != nil:
            let kind = Self.analyticsKind(path)!
            let target = String(path.dropFirst(kind.count + 3)).removingPercentEncoding ?? ""
            let command = (method == .PUT ? "set_" : "remove_") + kind
            forward(command, target: target, body: body, on: changes, respond)
        case (.GET, "/events"):
            Self.startStream(head, on: channel, contentType: "text/event-stream")
            events.add(channel)
            return .stream
        case (.GET, "/stream.mjpg"), (.GET, "/snapshot.jpg"):
            guard let preview = preview(query["source"]) else {
                respond(.error(404, "no input named \(query["source"] ?? ""): the inputs are \(previews.withLock { $0 }.map(\.source).joined(separator: ", "))"))
                return .reply
            }
            if path == "/snapshot.jpg" {
                answer(on: work) {
                    guard let p = preview.snapshot() else { return respond(.error(503, "no picture yet: the input has not delivered a frame")) }
                    respond(HTTPReply(status: 200, contentType: "image/jpeg", body: p.jpeg,
                                      headers: p.headers.filter { $0.0.hasPrefix("X-") } + [("Cache-Control", "no-store")]))
                }
            } else {
                guard statistics.startViewer(max: limits.maxViewers) else {
                    statistics.count(.viewersBusy)
                    respond(.error(503, "\(limits.maxViewers) live pictures are being sent: try again later").with(header: ("Retry-After", "5")))
                    return .reply
                }
                channel.closeFuture.whenComplete { [statistics] _ in statistics.viewerDone() }
                Self.startStream(head, on: channel, contentType: "multipart/x-mixed-replace; boundary=\(LivePreview.boundary)")
                preview.addViewer(channel)
                return .stream
            }
        case (.GET, "/history"):
            answer(on: work) { [service, query] in
                guard let answer = service.history(query: query) else {
                    return respond(.error(404, "this run keeps no events (--events-db PATH keeps them)"))
                }
                respond(.json(answer.status, answer.json))
            }
        case (.GET, "/clips"), (.GET, "/snapshots"):
            let kind = String(path.dropFirst())
            answer(on: work) { [service, query] in
                guard let list = service.evidenceList(kind, query: query) else {
                    return respond(.error(404, "this run keeps no \(kind) (--\(kind) DIR keeps them)"))
                }
                respond(.json(list.status, list.json))
            }
        case (.GET, _) where path.hasPrefix("/clips/") || path.hasPrefix("/snapshots/"):
            let kind = path.hasPrefix("/clips/") ? "clips" : "snapshots"
            let name = String(path.dropFirst(kind.count + 2))
            let range = head.headers.first(name: "Range")
            answer(on: work) { [service, statistics, limits] in
                guard statistics.startFileAnswer(max: limits.maxFileAnswers) else {
                    statistics.count(.filesBusy)
                    return respond(.error(503, "\(limits.maxFileAnswers) clips and snapshots are being sent: try again later").with(header: ("Retry-After", "5")))
                }
                guard let file = service.evidenceFile(kind, name: name) else {
                    statistics.fileAnswerDone()
                    return respond(.error(404, "no \(kind.dropLast()) named \(name.prefix(200)) (GET /\(kind) lists them)"))
                }
                switch FileRanges.answer(file, range: range) {
                case .reply(let reply):
                    statistics.fileAnswerDone()
                    respond(reply)
                case .bytes(let file, let status, let first, let count, let headers):
                    let reply = HTTPReply(status: status, contentType: file.contentType, body: [], headers: headers)
                    let (response, keepAlive) = Self.responseHead(reply, contentLength: count, to: head)
                    FileSender.send(file, first: first, count: count, head: response, keepAlive: keepAlive, stallLimit: limits.fileStallSeconds,
                                    on: channel, statistics: statistics) {
                        statistics.fileAnswerDone()
                    }
                }
            }
        case (.GET, _):
            respond(web.reply(for: path) ?? .error(404, "no such page: \(path)"))
        default:
            let allowed = ["/controls": "GET, POST", "/inputs": "GET, POST", "/analytics/reset": "POST"][path]
                ?? (path.hasPrefix("/inputs/") ? "GET, PUT, DELETE" : Self.analyticsKind(path) != nil ? "PUT, DELETE" : "GET")
            respond(HTTPReply.error(405, "\(head.method) is not served at \(path) (\(allowed) is)").with(header: ("Allow", allowed)))
        }
        return .reply
    }

    /// `zone`, `line`, `track`, `mask` or `filter` for /zones/NAME, /lines/NAME, /tracks/PLUGIN, /masks/NAME,
    /// /filters/LABEL; nil for other paths.
    static func analyticsKind(_ path: String) -> String? {
        for kind in ["zone", "line", "track", "mask", "filter"] where path.hasPrefix("/\(kind)s/") && path.count > kind.count + 3 { return kind }
        return nil
    }

    /// A route that stands for a command (`/inputs`, `/analytics`, `/zones`...): the run carries it
    /// out on `queue`, and its answer is the response.
    private func forward(_ command: String, target: String?, body: [UInt8], on queue: DispatchQueue,
                         _ respond: @escaping @Sendable (HTTPReply) -> Void) {
        answer(on: queue) { [service] in
            let answer = service.command(command, target: target, body: body)
            respond(.json(answer.status, answer.json))
        }
    }

    private func answer(on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        if inline { body() } else { queue.async(execute: body) }
    }

    /// The preview of the input named `source`, or of the first input.
    private func preview(_ source: String?) -> LivePreview? {
        previews.withLock { all in
            guard let source, !source.isEmpty else { return all.first }
            return all.first { $0.source == source }
        }
    }

    /// With every answer: a browser takes each body as the type it is said to be (a JSON answer is
    /// never run as a script or shown as a page), and a page's address (which may hold the token)
    /// is never sent to another site as a Referer.
    static let securityHeaders = [("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer")]

    /// Writes a whole response (from any thread); closes the connection after it unless kept alive.
    static func send(_ reply: HTTPReply, to request: HTTPRequestHead, on channel: Channel) {
        let (head, keepAlive) = responseHead(reply, contentLength: UInt64(reply.body.count), to: request)
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        if !reply.body.isEmpty {
            channel.write(HTTPServerResponsePart.body(.byteBuffer(channel.allocator.buffer(bytes: reply.body))), promise: nil)
        }
        let done = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        if !keepAlive { done.whenComplete { _ in channel.close(promise: nil) } }
    }

    /// The head of an answer of `contentLength` bytes, and whether the connection is kept after it.
    static func responseHead(_ reply: HTTPReply, contentLength: UInt64, to request: HTTPRequestHead) -> (HTTPResponseHead, Bool) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: reply.contentType)
        headers.add(name: "Content-Length", value: String(contentLength))
        for (name, value) in reply.headers + securityHeaders { headers.add(name: name, value: value) }
        let keepAlive = request.isKeepAlive
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        return (HTTPResponseHead(version: request.version, status: HTTPResponseStatus(statusCode: reply.status), headers: headers), keepAlive)
    }

    /// Writes the head of a response that never ends (chunked): the stream follows as it comes.
    private static func startStream(_ request: HTTPRequestHead, on channel: Channel, contentType: String) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Connection", value: "close")
        for (name, value) in securityHeaders { headers.add(name: name, value: value) }
        channel.writeAndFlush(HTTPServerResponsePart.head(HTTPResponseHead(version: request.version, status: .ok, headers: headers)),
                              promise: nil)
    }
}

extension HTTPReply {
    func with(header: (String, String)) -> HTTPReply {
        var r = self
        r.headers.append(header)
        return r
    }
}
