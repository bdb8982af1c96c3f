import Foundation
import HealthProbeProtocol
import NIOCore

/// Counts what a connection's peer sent, as it arrives (before the session reads
/// it): a frame that arrives while the server is still answering a `BUNDLE_END` was
/// sent before the bundle's ack, which the client must wait for (Protocol/README.md
/// section 4), however long the apply took.
/// `@unchecked Sendable`: its one mutable count is read and written only under `lock`
/// (`Mutex` needs macOS 15; the package supports 14).
final class FrameArrivals: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    /// Messages arrived so far (the hello included).
    var arrived: Int { lock.withLock { count } }

    func add() { lock.withLock { count += 1 } }

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
