import CVHostCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// `--http`: the embedded HTTP/1.1 server (SwiftNIO: its parser and connections), on one event
/// loop thread of its own. Nothing it does runs on a capture or a delivery thread, and nothing
/// waits for a client: a slow one is sent less, then closed (`StreamingClient`).
public final class HTTPServer: Sendable {
    public struct Settings: Sendable {
        public var host: String
        public var port: Int
        /// Wanted by every route but /healthz; required when `host` is not a loopback address.
        public var token: String?

        public init(host: String, port: Int, token: String?) {
            self.host = host
            self.port = port
            self.token = token
        }

        public var isLoopback: Bool { host == "localhost" || host == "::1" || host.hasPrefix("127.") }

        /// Why these settings cannot be served (an address beyond loopback without a token), or nil.
        public var refusal: String? {
            guard !isLoopback && token == nil else { return nil }
            return "--http \(host):\(port) listens beyond this machine: give a token with --http-token-file FILE (or $CVHOST_HTTP_TOKEN), or listen on 127.0.0.1"
        }
    }

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    private let group: MultiThreadedEventLoopGroup
    private let channel: Channel
    private let router: HTTPRouter
    /// The address and port listened on (the port chosen by the system when 0 was asked for).
    public let address: String
    public let port: Int

    /// A request's body larger than this is refused (413): a control change is a few bytes.
    static let maxBody = 64 * 1024

    /// Starts listening. - Throws: `StartError` naming the address (in use, not an address of
    /// this machine, a non-loopback address without a token).
    public init(_ settings: Settings, service: LiveViewService, previews: [LivePreview], events: EventStream) throws(StartError) {
        if let refusal = settings.refusal { throw StartError(description: refusal) }
        let web = WebFiles.locate()
        if web.folder == nil { Log.warning("the live view's page was not found beside the executable: / answers 404 (the other routes work)") }
        let router = HTTPRouter(access: HTTPAccess(token: settings.token), service: service, previews: previews, events: events, web: web)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            // What a client may have waiting before it counts as behind (a few preview pictures).
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(HTTPRequestHandler(router: router))
                }
            }
        do {
            channel = try bootstrap.bind(host: settings.host, port: settings.port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw StartError(description: "cannot listen on \(settings.host):\(settings.port) for --http: \(error)")
        }
        self.group = group
        self.router = router
        address = settings.host
        port = channel.localAddress?.port ?? settings.port
    }

    /// The page's address, e.g. http://127.0.0.1:8080/.
    public var url: String {
        "http://\(address.contains(":") ? "[\(address)]" : address):\(port)/"
    }

    /// Closes every connection and stops listening.
    public func stop() {
        router.previews.forEach { $0.closeViewers() }
        router.events.closeAll()
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }
}

/// Gathers one request (head, body up to `HTTPServer.maxBody`) and hands it to the router.
final class HTTPRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let router: HTTPRouter
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(router: HTTPRouter) {
        self.router = router
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body = []
            tooLarge = false
        case .body(let chunk):
            if body.count + chunk.readableBytes > HTTPServer.maxBody {
                tooLarge = true
            } else if !tooLarge {
                body += chunk.readableBytesView
            }
        case .end:
            guard let head else { return }
            self.head = nil
            if tooLarge {
                var h = head
                h.headers.replaceOrAdd(name: "Connection", value: "close")
                HTTPRouter.send(.error(413, "the request's body is larger than \(HTTPServer.maxBody) bytes"), to: h, on: context.channel)
            } else {
                router.handle(head, body: body, channel: context.channel)
            }
        }
    }
}
