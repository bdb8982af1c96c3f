import NIOCore
import Synchronization
import HealthProbeProtocol

/// Keeps a sync session open while the node is slow to send its next frame (a bundle's
/// build, streamed between its parts or built whole before `BUNDLE_BEGIN`): once the server
/// accepted the node (`AUTH_OK`), a `PING` is written at each tick of `interval` that follows
/// a whole interval without a frame written, unless the node waits for an answer (the
/// server is then the one working, and a frame sent while it answers `BUNDLE_END` or
/// `BUNDLE_STREAM_END` is refused). The server times a connection out after 120 s without a
/// frame while it waits for one (Protocol/README.md section 6); it hears from the node at
/// least every two intervals. The `PONG`s owed for these `PING`s are taken here and never
/// reach the session. It runs on the connection's event loop, so a busy task pool cannot
/// hold it back.
final class SessionKeepalive: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = SyncInbound
    typealias InboundOut = SyncInbound
    typealias OutboundIn = SyncOutbound
    typealias OutboundOut = SyncOutbound

    /// The `PING`s sent, for the sync's report.
    final class Count: Sendable {
        private let value = Mutex(0)
        func add() { value.withLock { $0 += 1 } }
        var pings: Int { value.withLock { $0 } }
    }

    let interval: TimeAmount
    let count: Count
    /// Set once the server answered `AUTH` (or `ENROLL`) with `AUTH_OK`.
    private var accepted = false
    private var wroteSinceTick = false
    /// Messages the node sent that the server has not answered yet (its own `PING`s included).
    private var owed = OwedAnswers()
    /// Of those, the `PING`s this handler sent: their `PONG`s are taken here.
    private var ownPongs = 0
    private var timer: Scheduled<Void>?

    init(interval: TimeAmount, count: Count = Count()) {
        self.interval = interval
        self.count = count
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        owed.sending(unwrapOutboundIn(data))
        wroteSinceTick = true
        context.write(data, promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let message = unwrapInboundIn(data)
        owed.received(message)
        if case .frame(let f) = message {
            if f.kind == .pong, ownPongs > 0 {
                ownPongs -= 1
                return
            }
            if f.kind == .authOK, !accepted {
                accepted = true
                wroteSinceTick = true
                arm(context)
            }
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { stop() }

    private func stop() {
        timer?.cancel()
        timer = nil
    }

    private func arm(_ context: ChannelHandlerContext) {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: interval) { [self] in
            tick(bound.value)
        }
    }

    private func tick(_ context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        if !wroteSinceTick && owed.none {
            owed.sendingOwn()
            ownPongs += 1
            count.add()
            context.writeAndFlush(wrapOutboundOut(.frame(SyncFrame(kind: .ping, payload: ByteBuffer()))), promise: nil)
        }
        wroteSinceTick = false
        arm(context)
    }
}
