import NIOCore
import NIOEmbedded
import Testing
import HealthProbeProtocol
@testable import HealthProbeNode

/// The node's wait for the server's answers (`ReplyDeadline`), on an embedded event loop.
@Suite("Reply deadline")
struct ReplyDeadlineTests {
    static func frame(_ kind: SyncFrame.Kind) -> SyncFrame { SyncFrame(kind: kind, payload: ByteBuffer()) }

    @Test("a PING still unanswered when BUNDLE_STREAM_END is sent: its PONG starts the wait for the acknowledgement again, which times out at the limit")
    func pongThenAcknowledgement() throws {
        let channel = EmbeddedChannel(handler: ReplyDeadline(limit: .seconds(10)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try channel.writeOutbound(SyncOutbound.frame(Self.frame(.ping)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        try channel.writeOutbound(SyncOutbound.frame(Self.frame(.bundleStreamEnd)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        try channel.writeInbound(SyncInbound.frame(Self.frame(.pong)))
        // The acknowledgement is owed: 10 s from the PONG, not from nothing.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(9_999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(2))
        #expect(!channel.isActive)
        #expect(throws: SyncProtocolError.self) { try channel.throwIfErrorCaught() }
    }

    @Test("answered requests leave no wait; the parts a bundle sends start none; a request waits at most the limit")
    func answeredLeavesNone() throws {
        let channel = EmbeddedChannel(handler: ReplyDeadline(limit: .seconds(10)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try channel.writeOutbound(SyncOutbound.frame(Self.frame(.ping)))
        try channel.writeInbound(SyncInbound.frame(Self.frame(.pong)))
        try channel.writeOutbound(SyncOutbound.frame(Self.frame(.bundlePart)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        try channel.writeOutbound(SyncOutbound.frame(Self.frame(.chainStatusRequest)))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(10_001))
        #expect(!channel.isActive)
    }
}
