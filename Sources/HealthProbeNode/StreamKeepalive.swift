import NIOCore
import Synchronization
import HealthProbeProtocol

/// While the node sends a streamed bundle (from `BUNDLE_STREAM_BEGIN` to `BUNDLE_STREAM_END`),
/// writes a `PING` at each tick of `interval` that follows a whole interval without a frame
/// written, so that the server, which times out after 120 s without a frame (Protocol/README.md
/// section 3.1), hears from the node at least every two intervals however slow the build is.
/// The `PONG`s owed for them are taken here and never reach the session. It runs on the
/// connection's event loop, so a busy task pool cannot hold it back.
final class StreamKeepalive: ChannelDuplexHandler, RemovableChannelHandler {
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
    private var streaming = false
    private var wroteSinceTick = false
    private var owed = 0
    private var timer: Scheduled<Void>?

    init(interval: TimeAmount, count: Count = Count()) {
        self.interval = interval
        self.count = count
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .frame(let f) = unwrapOutboundIn(data) {
            switch f.kind {
            case .bundleStreamBegin:
                streaming = true
                arm(context)
            case .bundleStreamEnd:
                streaming = false
                timer?.cancel()
                timer = nil
            default:
                break
            }
        }
        wroteSinceTick = true
        context.write(data, promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if owed > 0, case .frame(let f) = unwrapInboundIn(data), f.kind == .pong {
            owed -= 1
            return
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    private func arm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        wroteSinceTick = true
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: interval) { [self] in
            tick(bound.value)
        }
    }

    private func tick(_ context: ChannelHandlerContext) {
        guard streaming, context.channel.isActive else { return }
        if !wroteSinceTick {
            owed += 1
            count.add()
            context.writeAndFlush(wrapOutboundOut(.frame(SyncFrame(kind: .ping, payload: ByteBuffer()))), promise: nil)
        }
        wroteSinceTick = false
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: interval) { [self] in
            tick(bound.value)
        }
    }
}
