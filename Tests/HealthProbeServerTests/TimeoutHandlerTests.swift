import Foundation
import NIOCore
import NIOEmbedded
import Testing
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

/// The timeout handler on an `EmbeddedChannel`, its clock moved by `advanceTime`:
/// no real waiting, and the exact instants are checked.
@Suite("Sync timeouts on an injected clock")
struct TimeoutHandlerTests {
    /// A channel with only the timeout handler, active, and its event loop.
    func channel(hello: TimeAmount = .seconds(10), idle: TimeAmount = .seconds(120)) throws -> (EmbeddedChannel, EmbeddedEventLoop) {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(handler: SyncTimeoutHandler(hello: hello, idle: idle), loop: loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, loop)
    }

    /// The ERROR frame the handler wrote, if any, and its message.
    func timeoutError(_ channel: EmbeddedChannel) throws -> String? {
        guard let out = try channel.readOutbound(as: SyncOutbound.self) else { return nil }
        guard case .frame(let f) = out, f.kind == .error else { return "not an ERROR frame" }
        let o = try f.jsonObject()
        guard case .string("timeout")? = o["code"], case .string(let message)? = o["message"] else { return "not a timeout" }
        return message
    }

    var ping: SyncInbound { .frame(SyncFrame(kind: .ping, payload: ByteBuffer())) }

    @Test("no hello: nothing until the hello limit, then ERROR timeout and the connection closed")
    func noHello() throws {
        let (channel, loop) = try channel(hello: .seconds(10))
        loop.advanceTime(by: .seconds(10) - .nanoseconds(1))
        #expect(try timeoutError(channel) == nil)
        #expect(channel.isActive)
        loop.advanceTime(by: .nanoseconds(1))
        #expect(try timeoutError(channel) == "no hello within 10 s")
        #expect(!channel.isActive)
    }

    /// The server's hello, as the server answers the client's.
    func answerHello(_ channel: EmbeddedChannel) throws {
        _ = try channel.readInbound(as: SyncInbound.self)
        try channel.writeOutbound(SyncOutbound.hello(SyncHello()))
        _ = try channel.readOutbound(as: SyncOutbound.self)
    }

    @Test("a client hello the server has not answered yet holds the idle clock (a server slow to answer never times out its peer); its answer starts it")
    func helloUnanswered() throws {
        let (channel, loop) = try channel(hello: .seconds(10), idle: .seconds(60))
        try channel.writeInbound(SyncInbound.hello(SyncHello()))
        loop.advanceTime(by: .seconds(600))
        #expect(try timeoutError(channel) == nil)
        #expect(channel.isActive)
        try channel.writeOutbound(SyncOutbound.hello(SyncHello()))
        _ = try channel.readOutbound(as: SyncOutbound.self)
        loop.advanceTime(by: .seconds(59))
        #expect(try timeoutError(channel) == nil)
        loop.advanceTime(by: .seconds(1))
        #expect(try timeoutError(channel)?.contains("no frame for 60 s") == true)
    }

    @Test("after the hello the idle limit applies from the last frame; each frame restarts it")
    func idle() throws {
        let (channel, loop) = try channel(hello: .seconds(10), idle: .seconds(120))
        loop.advanceTime(by: .seconds(5))
        try channel.writeInbound(SyncInbound.hello(SyncHello()))
        try answerHello(channel)
        // Past the hello limit: the idle limit (from the hello) is what counts now.
        loop.advanceTime(by: .seconds(119))
        #expect(try timeoutError(channel) == nil)
        try channel.writeInbound(ping)
        _ = try channel.readInbound(as: SyncInbound.self)
        try channel.writeOutbound(SyncOutbound.frame(SyncFrame(kind: .pong, payload: ByteBuffer())))
        _ = try channel.readOutbound(as: SyncOutbound.self)
        loop.advanceTime(by: .seconds(119))
        #expect(try timeoutError(channel) == nil)
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(1))
        #expect(try timeoutError(channel)?.contains("no frame for 120 s") == true)
        #expect(!channel.isActive)
    }

    @Test("while a request is unanswered the server is working: no idle timeout until the reply, then the limit again")
    func pendingRequest() throws {
        let (channel, loop) = try channel(idle: .seconds(60))
        try channel.writeInbound(SyncInbound.hello(SyncHello()))
        try answerHello(channel)
        try channel.writeInbound(SyncInbound.frame(SyncFrame(kind: .bundleEnd, payload: ByteBuffer())))
        loop.advanceTime(by: .seconds(600))
        #expect(try timeoutError(channel) == nil)
        #expect(channel.isActive)
        try channel.writeOutbound(SyncOutbound.frame(SyncFrame(kind: .bundleAck, payload: ByteBuffer())))
        _ = try channel.readOutbound(as: SyncOutbound.self)
        loop.advanceTime(by: .seconds(59))
        #expect(try timeoutError(channel) == nil)
        loop.advanceTime(by: .seconds(1))
        #expect(try timeoutError(channel)?.contains("no frame for 60 s") == true)
    }

    @Test("a PING that arrives while a BUNDLE_END is unanswered is answered by the ERROR after the ack: no timeout meanwhile, none after the two replies but the idle limit")
    func pingBeforeTheAck() throws {
        let (channel, loop) = try channel(idle: .seconds(60))
        try channel.writeInbound(SyncInbound.hello(SyncHello()))
        try answerHello(channel)
        try channel.writeInbound(SyncInbound.frame(SyncFrame(kind: .bundleEnd, payload: ByteBuffer())))
        try channel.writeInbound(ping)
        loop.advanceTime(by: .seconds(600))
        #expect(try timeoutError(channel) == nil, "the server is applying")
        // The ack answers the BUNDLE_END; the PING is still unanswered until its ERROR.
        try channel.writeOutbound(SyncOutbound.frame(SyncFrame(kind: .bundleAck, payload: ByteBuffer())))
        _ = try channel.readOutbound(as: SyncOutbound.self)
        loop.advanceTime(by: .seconds(600))
        #expect(try timeoutError(channel) == nil)
        try channel.writeOutbound(SyncOutbound.frame(.error(SyncProtocolError(.unexpectedMessage, "a PING frame before the reply to the previous one"))))
        _ = try channel.readOutbound(as: SyncOutbound.self)
        loop.advanceTime(by: .seconds(60))
        #expect(try timeoutError(channel)?.contains("no frame for 60 s") == true)
    }

    @Test("a closed connection's timer is cancelled: nothing is written later")
    func closedCancels() throws {
        let (channel, loop) = try channel(hello: .seconds(1))
        try channel.close().wait()
        loop.advanceTime(by: .seconds(10))
        #expect(try channel.readOutbound(as: SyncOutbound.self) == nil)
    }

    @Test("every request the server answers holds the idle clock until its answer", arguments: [
        (SyncFrame.Kind.auth, SyncFrame.Kind.authOK), (.auth, .error), (.enroll, .authOK), (.chainStatusRequest, .chainStatus),
        (.householdRequest, .household), (.bundleEnd, .error), (.ping, .pong)])
    func everyRequest(request: SyncFrame.Kind, answer: SyncFrame.Kind) throws {
        let (channel, loop) = try channel(idle: .seconds(5))
        try channel.writeInbound(SyncInbound.hello(SyncHello()))
        try answerHello(channel)
        try channel.writeInbound(SyncInbound.frame(SyncFrame(kind: request, payload: ByteBuffer())))
        loop.advanceTime(by: .seconds(60))
        #expect(try timeoutError(channel) == nil)
        #expect(channel.isActive)
        try channel.writeOutbound(SyncOutbound.frame(SyncFrame(kind: answer, payload: ByteBuffer())))
        _ = try channel.readOutbound(as: SyncOutbound.self)
        loop.advanceTime(by: .seconds(5))
        #expect(try timeoutError(channel)?.contains("no frame for 5 s") == true)
    }

    @Test("limits are named as set: whole seconds, or with their milliseconds")
    func limitText() {
        #expect(SyncTimeoutHandler.seconds(.seconds(120)) == "120")
        #expect(SyncTimeoutHandler.seconds(.milliseconds(1500)) == "1.5")
        #expect(SyncTimeoutHandler.seconds(.milliseconds(250)) == "0.25")
        #expect(SyncTimeoutHandler.seconds(.milliseconds(1005)) == "1.005")
    }
}
