import NIOCore
import HealthProbeProtocol

/// A node waits for a server's answer only so long: from the moment it sends a message
/// that the server answers (the hello, `AUTH`, `ENROLL`, `CHAIN_STATUS_REQUEST`,
/// `HOUSEHOLD_REQUEST`, `BUNDLE_END`, `BUNDLE_STREAM_END`, `PING`, `RESTORE_REQUEST`) until anything arrives, at most `limit`;
/// then the connection fails with `timeout`. Sending a bundle's parts is not waiting:
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

    init(limit: TimeAmount, partsAwaitState: Bool = false) {
        self.limit = limit
        self.partsAwaitState = partsAwaitState
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        timer?.cancel()
        timer = nil
        if partsAwaitState, case .frame(let f) = unwrapInboundIn(data), f.kind == .restorePart { arm(context) }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if timer == nil, Self.isAnswered(unwrapOutboundIn(data)) { arm(context) }
        context.write(data, promise: promise)
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
