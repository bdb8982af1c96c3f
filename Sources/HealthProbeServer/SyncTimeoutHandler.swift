import HealthProbeProtocol
import NIOCore

/// Closes a connection that sends no hello within `hello`, or no frame for
/// `idle` while the server is waiting for one (Protocol/README.md 6), after
/// an ERROR frame `timeout`. While the client's hello or a request (AUTH, ENROLL, CHAIN_STATUS_REQUEST,
/// HOUSEHOLD_REQUEST, BUNDLE_END, BUNDLE_STREAM_END, PING, RESTORE_REQUEST) is unanswered the server is
/// the one working (a refused AUTH is answered only after the throttle's wait), and
/// the idle clock is restarted instead; so it is at each `RESTORE_PART` sent.
final class SyncTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = SyncInbound
    typealias InboundOut = SyncInbound
    typealias OutboundIn = SyncOutbound
    typealias OutboundOut = SyncOutbound

    let hello: TimeAmount
    let idle: TimeAmount
    private var timer: Scheduled<Void>?
    private var sawHello = false
    private var pendingRequests = 0

    /// The frames the server answers, and its answers (ERROR answers any of them).
    static let requests: Set<SyncFrame.Kind> = [.auth, .enroll, .chainStatusRequest, .householdRequest, .bundleEnd, .bundleStreamEnd, .ping, .restoreRequest]
    static let replies: Set<SyncFrame.Kind> = [.authOK, .chainStatus, .household, .bundleAck, .error, .pong, .restoreBundle, .restoreStream]

    init(hello: TimeAmount, idle: TimeAmount) {
        self.hello = hello
        self.idle = idle
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context, hello) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context, hello)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { timer?.cancel() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let message = unwrapInboundIn(data)
        sawHello = true
        switch message {
        case .frame(let f) where Self.requests.contains(f.kind): pendingRequests += 1
        case .hello: pendingRequests += 1  // answered by the server's hello
        default: break
        }
        arm(context, idle)
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .hello:
            if pendingRequests > 0 { pendingRequests -= 1 }
            arm(context, idle)
        case .frame(let f):
            if Self.replies.contains(f.kind), pendingRequests > 0 {
                pendingRequests -= 1
                arm(context, idle)
            } else if f.kind == .restorePart || f.kind == .restoreState {
                arm(context, idle)
            }
        }
        context.write(data, promise: promise)
    }

    private func arm(_ context: ChannelHandlerContext, _ after: TimeAmount) {
        timer?.cancel()
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: after) { [self] in
            let context = bound.value
            if pendingRequests > 0 { arm(context, idle); return }
            let seconds = Self.seconds(after)
            let e = sawHello
                ? SyncProtocolError(.timeout, "no frame for \(seconds) s; send PING to keep an idle connection open")
                : SyncProtocolError(.timeout, "no hello within \(seconds) s")
            context.writeAndFlush(wrapOutboundOut(.frame(.error(e))), promise: nil)
            context.close(promise: nil)
        }
    }

    /// A limit as the message says it: whole seconds, or with the milliseconds it has ("1.5").
    static func seconds(_ amount: TimeAmount) -> String {
        let ms = amount.nanoseconds / 1_000_000
        guard ms % 1000 != 0 else { return "\(ms / 1000)" }
        var fraction = String(ms % 1000)
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(ms / 1000).\(fraction)"
    }
}
