import NIOCore
import HealthProbeProtocol

/// A node waits for a server's answer only so long: from the moment it sends a message
/// that the server answers (the hello, `AUTH`, `ENROLL`, `CHAIN_STATUS_REQUEST`,
/// `HOUSEHOLD_REQUEST`, `BUNDLE_END`, `BUNDLE_STREAM_END`, `PING`, `RESTORE_REQUEST`) until anything arrives, at most `limit`;
/// then the connection fails with `timeout`. The messages sent and not answered yet are
/// counted (a `PING` sent while a bundle streams, then its `BUNDLE_STREAM_END`): a reply
/// starts the wait again while another is owed. Sending a bundle's parts is not waiting:
/// a large bundle takes as long as it takes to send. With `partsAwaitState` (version 3,
/// whose restore sends the chain state after the parts), each `RESTORE_PART` read starts
/// the wait again, so a server that stops after a part fails too.
final class ReplyDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = SyncInbound
    typealias InboundOut = SyncInbound
    typealias OutboundIn = SyncOutbound
    typealias OutboundOut = SyncOutbound

    let limit: TimeAmount
    let partsAwaitState: Bool
    private var timer: Scheduled<Void>?
    /// Messages sent that the server has not answered yet.
    private var owed = OwedAnswers()

    init(limit: TimeAmount, partsAwaitState: Bool = false) {
        self.limit = limit
        self.partsAwaitState = partsAwaitState
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        timer?.cancel()
        timer = nil
        let message = unwrapInboundIn(data)
        owed.received(message)
        if !owed.none {
            arm(context)
        } else if partsAwaitState, case .frame(let f) = message, f.kind == .restorePart {
            arm(context)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if owed.sending(unwrapOutboundIn(data)), timer == nil { arm(context) }
        context.write(data, promise: promise)
    }

    /// Whether `message` answers a message sent (the first frame of a reply: a restore's
    /// parts and its state follow the `RESTORE_BUNDLE` or `RESTORE_STREAM` that answered).
    static func isReply(_ message: SyncInbound) -> Bool {
        switch message {
        case .hello: return true
        case .frame(let f):
            switch f.kind {
            case .authOK, .chainStatus, .household, .bundleAck, .pong, .restoreBundle, .restoreStream, .error: return true
            default: return false
            }
        }
    }

    private func arm(_ context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let seconds = Double(limit.nanoseconds) / 1e9
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: limit) {
            let context = loopBound.value
            context.fireErrorCaught(SyncProtocolError(.timeout, "the server did not answer within \(Int(seconds)) s; it may be overloaded or not a HealthProbe server (sync again later)"))
            context.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    static func isAnswered(_ message: SyncOutbound) -> Bool {
        switch message {
        case .hello: return true
        case .frame(let f):
            switch f.kind {
            case .auth, .enroll, .chainStatusRequest, .householdRequest, .bundleEnd, .bundleStreamEnd, .ping, .restoreRequest: return true
            default: return false
            }
        }
    }
}
