import NIOCore
import NIOHTTP1

/// One connection's requests: gathers each (head, body up to `HTTPServer.maxBody`) and hands it
/// to the router, and closes the connection when no whole request arrives within
/// `requestTimeout` seconds of its opening or of the end of its previous answer. That one
/// deadline closes idle connections and slowloris ones (a header a byte a second); one whose
/// request cannot be parsed is closed after its 400 (`errorCaught`). It is off while a request is being
/// answered, and for good once the connection carries a stream.
final class HTTPRequestHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let router: HTTPRouter
    private let requestTimeout: TimeAmount
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false
    private var deadline: Scheduled<Void>?
    private var streaming = false

    init(router: HTTPRouter, requestTimeout: Double) {
        self.router = router
        self.requestTimeout = .nanoseconds(Int64(requestTimeout * 1e9))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startDeadline(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        startDeadline(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopDeadline()
        context.fireChannelInactive()
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
            stopDeadline()
            if tooLarge {
                var h = head
                h.headers.replaceOrAdd(name: "Connection", value: "close")
                HTTPRouter.send(.error(413, "the request's body is larger than \(HTTPServer.maxBody) bytes"), to: h, on: context.channel)
            } else if router.handle(head, body: body, channel: context.channel) == .stream {
                streaming = true
            }
        }
    }

    /// A request NIO's parser could not read: its error handler (before this one) has answered
    /// 400 with `Connection: close`; the connection is closed now, not when the deadline comes
    /// (the parser reads nothing more on it).
    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if error is HTTPParserError {
            context.close(promise: nil)
            return
        }
        context.fireErrorCaught(error)
    }

    /// Answers pass here on their way out (from any thread, on the event loop): the end of one
    /// starts the wait for the next request.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Before the end goes on: a pipelined request that it lets through stops the deadline again.
        if case .end = unwrapOutboundIn(data), !streaming, context.channel.isActive { startDeadline(context) }
        context.write(data, promise: promise)
    }

    private func startDeadline(_ context: ChannelHandlerContext) {
        stopDeadline()
        let channel = context.channel
        let statistics = router.statistics
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: requestTimeout) {
            statistics.count(.requestTimeout)
            channel.close(promise: nil)
        }
    }

    private func stopDeadline() {
        deadline?.cancel()
        deadline = nil
    }
}
