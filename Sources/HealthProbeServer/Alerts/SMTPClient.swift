import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// Delivers one message over SMTP: a thin NIO layer around `SMTPDialogue` (which decides
/// every step) and `SMTPReplyParser`. STARTTLS upgrades the same connection, implicit TLS
/// starts with it; the whole delivery, connection included, must finish within the settings' timeout.
public struct SMTPClient: Sendable {
    public let settings: SMTPSettings

    public init(settings: SMTPSettings) {
        self.settings = settings
    }

    /// Sends `message` (headers and body) to `recipients`; throws a value-free error on any failure.
    public func send(to recipients: [String], message: String) async throws {
        let tls = try Self.tlsContext(settings)
        let s = settings
        // An IP address is checked against the certificate's IP names; SNI carries host names only.
        let hostname: String? = (try? SocketAddress(ipAddress: s.host, port: 0)) == nil ? s.host : nil
        let dialogue = SMTPDialogue(envelope: .init(from: s.from, to: recipients, message: message), heloName: s.heloName,
                                    requireTLS: s.requireStartTLS, username: s.username, password: s.password, implicitTLS: s.tls == .implicit)
        let implicit = s.tls == .implicit
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let done = loop.makePromise(of: Void.self)
        let timeout = TimeAmount.milliseconds(Int64(s.timeoutSeconds * 1000))
        let channel: Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .connectTimeout(timeout)
                .channelInitializer { ch in
                    ch.eventLoop.makeCompletedFuture {
                        if implicit { try ch.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: hostname)) }
                        try ch.pipeline.syncOperations.addHandler(SMTPHandler(dialogue: dialogue, tls: tls, hostname: hostname, implicit: implicit, done: done))
                    }
                }
                .connect(host: s.host, port: s.port).get()
        } catch {
            done.fail(error)
            throw SMTPDialogue.Failure(description: "SMTP: could not connect to \(s.host):\(s.port) (\(error))")
        }
        let timer = loop.scheduleTask(in: timeout) {
            done.fail(SMTPDialogue.Failure(description: "SMTP: no delivery within \(Int(s.timeoutSeconds)) s"))
            channel.close(promise: nil)
        }
        defer { timer.cancel() }
        try await done.futureResult.get()
    }

    /// The TLS client context: the system's trust roots, or only `ca_file`'s when set; TLS 1.2 or later.
    static func tlsContext(_ s: SMTPSettings) throws -> NIOSSLContext {
        var config = TLSConfiguration.makeClientConfiguration()
        config.minimumTLSVersion = .tlsv12
        if let ca = s.caFile { config.trustRoots = .file(ca) }
        return try NIOSSLContext(configuration: config)
    }
}

/// Feeds replies to the dialogue and carries out its actions on the channel.
final class SMTPHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    var dialogue: SMTPDialogue
    var parser = SMTPReplyParser()
    let tls: NIOSSLContext
    let hostname: String?
    /// TLS came with the connection: its handshake is not a STARTTLS one.
    let implicit: Bool
    let done: EventLoopPromise<Void>
    var delivered = false
    var finished = false

    init(dialogue: SMTPDialogue, tls: NIOSSLContext, hostname: String?, implicit: Bool = false, done: EventLoopPromise<Void>) {
        self.implicit = implicit
        self.dialogue = dialogue
        self.tls = tls
        self.hostname = hostname
        self.done = done
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let replies: [SMTPReply]
        do { replies = try parser.feed(buffer.readableBytesView) } catch {
            finish(context, SMTPDialogue.Failure(description: "SMTP: the server's reply is malformed (\(error))"))
            return
        }
        for (i, reply) in replies.enumerated() where !finished {
            let actions = dialogue.receive(reply)
            // Bytes after the 220 to STARTTLS came in plain text: never taken as if from inside TLS.
            if actions.contains(.startTLS), i != replies.count - 1 || !parser.isIdle {
                finish(context, SMTPDialogue.Failure(description: "SMTP: the server sent more after agreeing to STARTTLS"))
                return
            }
            perform(actions, context)
        }
    }

    func perform(_ actions: [SMTPDialogue.Action], _ context: ChannelHandlerContext) {
        for action in actions where !finished {
            switch action {
            case .send(let text):
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: text)), promise: nil)
            case .startTLS:
                guard !implicit else { finish(context, SMTPDialogue.Failure(description: "SMTP: STARTTLS inside implicit TLS")); return }
                do {
                    let handler = try NIOSSLClientHandler(context: tls, serverHostname: hostname)
                    try context.pipeline.syncOperations.addHandler(handler, position: .first)
                } catch {
                    finish(context, SMTPDialogue.Failure(description: "SMTP: TLS could not start (\(error))"))
                }
            case .delivered:
                delivered = true
            case .close:
                finish(context, nil)
            case .fail(let failure):
                finish(context, failure)
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let e = event as? TLSUserEvent, case .handshakeCompleted = e, !implicit {
            perform(dialogue.tlsStarted(), context)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        finish(context, SMTPDialogue.Failure(description: "SMTP: \(error)"))
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(context, SMTPDialogue.Failure(description: "SMTP: the server closed the connection"))
        context.fireChannelInactive()
    }

    /// Ends the delivery once: delivered counts as success whatever follows (QUIT's answer or a close).
    func finish(_ context: ChannelHandlerContext, _ error: Error?) {
        guard !finished else { return }
        finished = true
        if delivered {
            done.succeed(())
        } else {
            done.fail(error ?? SMTPDialogue.Failure(description: "SMTP: the dialogue ended without delivery"))
        }
        context.close(promise: nil)
    }
}
