import NIOCore
import NIOHTTPTypes

/// Closes a web connection that is too slow to be a browser: the first request's head
/// (TLS handshake included) must arrive within `header` of the connection opening, each
/// request's body must be complete within `body` of its head, and the next request must
/// begin within `idle` of the previous response. A half-open connection or a body that
/// never ends holds nothing for longer. The time a response takes is not limited here.
final class RequestDeadlines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// What the connection is waiting for, with its deadline.
    enum State: Equatable {
        case head
        case body
        case response
    }

    let limits: WebServer.RequestLimits
    private(set) var state = State.head
    private var timer: Scheduled<Void>?

    init(_ limits: WebServer.RequestLimits) { self.limits = limits }

    func handlerAdded(context: ChannelHandlerContext) {
        arm(context, limits.header)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            state = .body
            arm(context, limits.body)
        case .body:
            break
        case .end:
            // The request is complete: the server's own time to answer is not a peer's slowness.
            state = .response
            timer?.cancel()
            timer = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), state == .response {
            state = .head
            arm(context, limits.idle)
        }
        context.write(data, promise: promise)
    }

    private func arm(_ context: ChannelHandlerContext, _ amount: TimeAmount) {
        timer?.cancel()
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: amount) {
            loopBound.value.close(promise: nil)
        }
    }
}
