import CVHostCore
import CVHostOutput
import Dispatch
import Foundation
import NIOCore
import NIOHTTP1

/// The routes of `--http` (the README's "Live view and control" lists them for users):
///
///     GET  /              the page (web/index.html, view.js, view.css)
///     GET  /stream.mjpg   the live picture, multipart/x-mixed-replace of JPEGs (?source=ID)
///     GET  /snapshot.jpg  the newest picture (?source=ID)
///     GET  /events        the JSON lines as Server-Sent Events
///     GET  /metrics       Prometheus text exposition
///     GET  /controls      what can be changed while running
///     POST /controls      change it (a JSON command)
///     GET  /healthz       200 while frames flow, else 503 (no token needed)
///
/// Answers that take time (encoding a snapshot, a camera's ioctl) are made on a queue of their
/// own, never on the event loop, so one slow answer delays no other client.
final class HTTPRouter: Sendable {
    let access: HTTPAccess
    let service: LiveViewService
    let previews: [LivePreview]
    let events: EventStream
    let web: WebFiles
    private let work = DispatchQueue(label: "cvhost.http.work")

    init(access: HTTPAccess, service: LiveViewService, previews: [LivePreview], events: EventStream, web: WebFiles) {
        self.access = access
        self.service = service
        self.previews = previews
        self.events = events
        self.web = web
    }

    func handle(_ head: HTTPRequestHead, body: [UInt8], channel: Channel) {
        let components = URLComponents(string: head.uri)
        let path = components?.percentEncodedPath ?? head.uri
        var query: [String: String] = [:]
        for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
        let respond: @Sendable (HTTPReply) -> Void = { reply in Self.send(reply, to: head, on: channel) }

        guard access.allows(path: path, query: query, headers: head.headers) else {
            var r = HTTPReply.error(401, "this server wants a token: Authorization: Bearer TOKEN, or ?token=TOKEN")
            r.headers.append(("WWW-Authenticate", "Bearer realm=\"cvhost\""))
            return respond(r)
        }
        switch (head.method, path) {
        case (.GET, "/healthz"):
            let h = service.health()
            respond(.json(h.healthy ? 200 : 503, h.json))
        case (.GET, "/metrics"):
            let text = service.metricsText()
            respond(HTTPReply(status: 200, contentType: PrometheusExposition.contentType, body: Array(text.utf8)))
        case (.GET, "/controls"):
            respond(.json(200, service.controls()))
        case (.POST, "/controls"):
            work.async { [service] in
                let answer = service.control(body)
                respond(.json(answer.status, answer.json))
            }
        case (.GET, "/events"):
            Self.startStream(head, on: channel, contentType: "text/event-stream")
            events.add(channel)
        case (.GET, "/stream.mjpg"), (.GET, "/snapshot.jpg"):
            guard let preview = preview(query["source"]) else {
                return respond(.error(404, "no input named \(query["source"] ?? ""): the inputs are \(previews.map(\.source).joined(separator: ", "))"))
            }
            if path == "/snapshot.jpg" {
                work.async {
                    guard let p = preview.snapshot() else { return respond(.error(503, "no picture yet: the input has not delivered a frame")) }
                    respond(HTTPReply(status: 200, contentType: "image/jpeg", body: p.jpeg,
                                      headers: p.headers.filter { $0.0.hasPrefix("X-") } + [("Cache-Control", "no-store")]))
                }
            } else {
                Self.startStream(head, on: channel, contentType: "multipart/x-mixed-replace; boundary=\(LivePreview.boundary)")
                preview.addViewer(channel)
            }
        case (.GET, _):
            respond(web.reply(for: path) ?? .error(404, "no such page: \(path)"))
        default:
            let allowed = path == "/controls" ? "GET, POST" : "GET"
            respond(HTTPReply.error(405, "\(head.method) is not served at \(path) (\(allowed) is)").with(header: ("Allow", allowed)))
        }
    }

    /// The preview of the input named `source`, or of the first input.
    private func preview(_ source: String?) -> LivePreview? {
        guard let source, !source.isEmpty else { return previews.first }
        return previews.first { $0.source == source }
    }

    /// Writes a whole response (from any thread); closes the connection after it unless kept alive.
    static func send(_ reply: HTTPReply, to request: HTTPRequestHead, on channel: Channel) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: reply.contentType)
        headers.add(name: "Content-Length", value: String(reply.body.count))
        for (name, value) in reply.headers { headers.add(name: name, value: value) }
        let keepAlive = request.isKeepAlive
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: request.version, status: HTTPResponseStatus(statusCode: reply.status), headers: headers)
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        if !reply.body.isEmpty {
            channel.write(HTTPServerResponsePart.body(.byteBuffer(channel.allocator.buffer(bytes: reply.body))), promise: nil)
        }
        let done = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        if !keepAlive { done.whenComplete { _ in channel.close(promise: nil) } }
    }

    /// Writes the head of a response that never ends (chunked): the stream follows as it comes.
    private static func startStream(_ request: HTTPRequestHead, on channel: Channel, contentType: String) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Connection", value: "close")
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
