import Foundation
import Synchronization
import HealthProbeProtocol
import NIOCore

/// Counts what a connection's peer sent, as it arrives (before the session reads
/// it): a frame that arrives while the server is still answering a `BUNDLE_END` was
/// sent before the bundle's ack, which the client must wait for (Protocol/README.md
/// section 4), however long the apply took.
final class FrameArrivals: Sendable {
    private let count = Mutex(0)

    /// Messages arrived so far (the hello included).
    var arrived: Int { count.withLock { $0 } }

    func add() { count.withLock { $0 += 1 } }

    /// The channel handler that counts, placed after the decoder.
    final class Counter: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = SyncInbound
        typealias InboundOut = SyncInbound
        let arrivals: FrameArrivals
        init(_ arrivals: FrameArrivals) { self.arrivals = arrivals }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            arrivals.add()
            context.fireChannelRead(data)
        }
    }
}
