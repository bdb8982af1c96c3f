import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A real HTTP receiver on 127.0.0.1 for alert tests: records every request's headers and
/// body, and answers 503 while `down` is set (or what `answer` says).
final class AlertReceiver: @unchecked Sendable {
    struct Received: Sendable {
        var path: String
        var headers: [String: String]
        var body: String
    }

    let received = NIOLockedValueBox<[Received]>([])
    let down = NIOLockedValueBox(false)
    /// When set, every request is answered with this status and these headers (a redirect, say).
    let answer = NIOLockedValueBox<(HTTPResponseStatus, [(String, String)])?>(nil)
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private var channel: Channel?
    var port: Int { channel?.localAddress?.port ?? 0 }

    func start() async throws {
        let me = self
        channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { ch in
                ch.pipeline.configureHTTPServerPipeline().flatMap { ch.pipeline.addHandler(Handler(receiver: me)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    func stop() async throws {
        try await channel?.close()
        try await group.shutdownGracefully()
    }

    final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let receiver: AlertReceiver
        var head: HTTPRequestHead?
        var body = ByteBuffer()
        init(receiver: AlertReceiver) { self.receiver = receiver }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let h): head = h; body.clear()
            case .body(var b): body.writeBuffer(&b)
            case .end:
                let isDown = receiver.down.withLockedValue { $0 }
                if !isDown, let head {
                    var headers: [String: String] = [:]
                    for (name, value) in head.headers { headers[name.lowercased()] = value }
                    let r = Received(path: head.uri, headers: headers, body: String(buffer: body))
                    receiver.received.withLockedValue { $0.append(r) }
                }
                var h = HTTPHeaders()
                h.add(name: "Content-Length", value: "0")
                let answer = receiver.answer.withLockedValue { $0 }
                for (name, value) in answer?.1 ?? [] { h.add(name: name, value: value) }
                let status = answer?.0 ?? (isDown ? .serviceUnavailable : .noContent)
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: h))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
