import CVHostCore
import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix

/// `--http`: the embedded HTTP/1.1 server (SwiftNIO: its parser and connections), on one event
/// loop thread of its own. Nothing it does runs on a capture or a delivery thread, and nothing
/// waits for a client: a slow one is sent less, then closed (`StreamingClient`); one that sends
/// no whole request in time is closed (`ConnectionLimits`); the event loop itself never waits on
/// the run (`HTTPRouter`).
public final class HTTPServer: Sendable {
    public struct Settings: Sendable {
        public var host: String
        public var port: Int
        /// Wanted by the routes that carry data (`HTTPAccess`); required when `host` is not a loopback address.
        public var token: String?
        /// Names the server answers to besides loopback names, IP addresses and `host`
        /// (`--http-allow-host`: a reverse proxy's name, the machine's name on the LAN); "*": any.
        public var allowedHosts: [String]
        public var limits: ConnectionLimits

        public init(host: String, port: Int, token: String?, allowedHosts: [String] = [], limits: ConnectionLimits = ConnectionLimits()) {
            self.host = host
            self.port = port
            self.token = token
            self.allowedHosts = allowedHosts
            self.limits = limits
        }

        /// Why these settings cannot be served, or nil: without a token, the address `host`
        /// resolves to (as the server binds it: getaddrinfo's first answer) must be a loopback
        /// address. The address, not the name: `127.cam.lan` may resolve to 0.0.0.0.
        public var refusal: String? {
            guard token == nil, let address = try? SocketAddress.makeAddressResolvingHost(host, port: port) else { return nil }
            return Self.refusal(host: host, port: port, address: address)
        }

        static func refusal(host: String, port: Int, address: SocketAddress) -> String? {
            guard !HTTPServer.isLoopback(address) else { return nil }
            let resolved = address.ipAddress.map { $0 == host ? "" : " (\(host) is \($0))" } ?? ""
            return "--http \(host):\(port) listens beyond this machine\(resolved): give a token with --http-token-file FILE (or $CVHOST_HTTP_TOKEN), or listen on 127.0.0.1"
        }
    }

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    private let channel: Channel
    /// Every connection open now, closed by `stop` (the event loop is the process's, not the server's).
    private let connections: Locked<[ObjectIdentifier: Channel]>
    private let router: HTTPRouter
    /// The address and port listened on (the port chosen by the system when 0 was asked for).
    public let address: String
    public let port: Int
    /// What was refused and closed, and the connections open: for /metrics.
    public let statistics: HTTPServerStatistics

    /// A request's body larger than this is refused (413): a control change is a few bytes.
    static let maxBody = 64 * 1024

    /// Starts listening. - Throws: `StartError` naming the address (in use, not an address of
    /// this machine, a non-loopback address without a token).
    public init(_ settings: Settings, service: LiveViewService, previews: [LivePreview], events: EventStream) throws(StartError) {
        if let refusal = settings.refusal { throw StartError(description: refusal) }
        let web = WebFiles.locate()
        if web.folder == nil { Log.warning("the live view's page was not found beside the executable: / answers 404 (the other routes work)") }
        let statistics = HTTPServerStatistics()
        let router = HTTPRouter(access: HTTPAccess(token: settings.token),
                                crossSite: CrossSiteCheck(listenHost: settings.host, allowed: settings.allowedHosts),
                                statistics: statistics, service: service, previews: previews, events: events, web: web, limits: settings.limits)
        let limits = settings.limits
        let connections = Locked<[ObjectIdentifier: Channel]>([:])
        // The process's event loops (NIO's singleton, as NIO recommends), not a group of the
        // server's own: a group shut down at the end left its loops in a reference cycle that
        // LeakSanitizer reported at every exit (scripts/sanitizer-runs.sh address).
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // When accept fails (no descriptor left: EMFILE), wait a second before the next try,
            // rather than spinning on a listening socket that stays readable.
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler(shouldForwardIOErrorCaught: false))
                }
            }
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            // What a client may have waiting before it counts as behind (a few preview pictures).
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
            .childChannelInitializer { channel in
                let id = ObjectIdentifier(channel)
                connections.withLock { $0[id] = channel }
                channel.closeFuture.whenComplete { _ in connections.withLock { _ = $0.removeValue(forKey: id) } }
                return channel.eventLoop.makeCompletedFuture {
                    try Self.configure(channel, router: router, limits: limits)
                }
            }
        do {
            channel = try bootstrap.bind(host: settings.host, port: settings.port).wait()
        } catch {
            throw StartError(description: "cannot listen on \(settings.host):\(settings.port) for --http: \(Self.reason(error))")
        }
        // The address bound is what counts (the name was resolved again by bind).
        if settings.token == nil, let bound = channel.localAddress,
           let refusal = Settings.refusal(host: settings.host, port: settings.port, address: bound) {
            try? channel.close().wait()
            throw StartError(description: refusal)
        }
        self.connections = connections
        self.router = router
        self.statistics = statistics
        address = settings.host
        port = channel.localAddress?.port ?? settings.port
    }

    /// Sets up a new connection: refused (503, closed) when `limits.maxConnections` are open;
    /// else HTTP/1.1 with the request handler. Called on the connection's event loop.
    static func configure(_ channel: Channel, router: HTTPRouter, limits: ConnectionLimits) throws {
        let statistics = router.statistics
        guard statistics.open(max: limits.maxConnections) else {
            statistics.count(.connectionLimit)
            try channel.pipeline.syncOperations.addHandler(ConnectionRefusal(limit: limits.maxConnections))
            return
        }
        channel.closeFuture.whenComplete { _ in statistics.closed() }
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
        try channel.pipeline.syncOperations.addHandler(HTTPRequestHandler(router: router, requestTimeout: limits.requestTimeout))
    }

    /// Whether an address is this machine's loopback (127.0.0.0/8, ::1, or 127.x mapped into IPv6).
    static func isLoopback(_ address: SocketAddress) -> Bool {
        guard let ip = address.ipAddress else { return false }
        return ip.hasPrefix("127.") || ip == "::1" || ip.lowercased().hasPrefix("::ffff:127.")
    }

    /// An error of SwiftNIO's as one plain phrase: "Address already in use", not the call's internals.
    static func reason(_ error: Error) -> String {
        if let io = error as? IOError { return Errno(rawValue: io.errnoCode).description }
        if let unknown = error as? SocketAddressError.UnknownHost { return "no address for \(unknown.host) (\(unknown.errorDescription))" }
        return "\(error)"
    }

    /// The page's address, e.g. http://127.0.0.1:8080/.
    public var url: String {
        "http://\(address.contains(":") ? "[\(address)]" : address):\(port)/"
    }

    /// Addresses a browser can open: the page's own, or, when the server listens on every address
    /// (0.0.0.0, ::), which no browser opens, this machine's name and each of its addresses.
    public var browserURLs: [String] {
        guard address == "0.0.0.0" || address == "::" else { return [url] }
        var hosts: [String] = []
        var name = [CChar](repeating: 0, count: 256)
        if gethostname(&name, name.count) == 0 { hosts.append(Self.text(name)) }
        var list: UnsafeMutablePointer<ifaddrs>?
        if getifaddrs(&list) == 0, let first = list {
            defer { freeifaddrs(list) }
            for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
                guard let sa = entry.pointee.ifa_addr else { continue }
                let family = Int32(sa.pointee.sa_family)
                guard family == AF_INET || (family == AF_INET6 && address == "::") else { continue }
                var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
                guard getnameinfo(sa, length, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
                let host = Self.text(text)
                if host.hasPrefix("fe80") || hosts.contains(host) { continue }  // link-local needs a zone no browser takes
                hosts.append(host)
            }
        }
        return hosts.map { "http://\($0.contains(":") ? "[\($0)]" : $0):\(port)/" }
    }

    /// A C string in a buffer, up to its NUL.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The preview of an input added while the server runs.
    public func add(_ preview: LivePreview) {
        router.previews.withLock { $0.append(preview) }
    }

    /// An input removed: its preview's viewers are closed, and it is no longer served.
    public func removePreview(source: String) {
        let gone = router.previews.withLock { all in
            defer { all.removeAll { $0.source == source } }
            return all.filter { $0.source == source }
        }
        gone.forEach { $0.closeViewers() }
    }

    /// Closes every connection and stops listening.
    public func stop() {
        router.previews.withLock { $0 }.forEach { $0.closeViewers() }
        router.events.closeAll()
        try? channel.close().wait()
        for connection in connections.withLock({ Array($0.values) }) { try? connection.close().wait() }
    }
}

/// A connection beyond the limit: told so in one answer (503) and closed, before any request is read.
final class ConnectionRefusal: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    func channelActive(context: ChannelHandlerContext) {
        let body = #"{"error":"too many connections (\#(limit)) to this server: try again later"}"# + "\n"
        let head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Retry-After: 5\r\nConnection: close\r\n\r\n"
        let channel = context.channel
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: head + body))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
