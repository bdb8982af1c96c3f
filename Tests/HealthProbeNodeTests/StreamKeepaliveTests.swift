import NIOCore
import NIOEmbedded
import Testing
import HealthProbeProtocol
@testable import HealthProbeNode

/// The node's keepalive while it streams a bundle (`StreamKeepalive`), on an embedded event loop.
@Suite("Stream keepalive")
struct StreamKeepaliveTests {
    static func frame(_ kind: SyncFrame.Kind) -> SyncFrame { SyncFrame(kind: kind, payload: ByteBuffer()) }

    /// The kinds of the frames written so far.
    static func written(_ channel: EmbeddedChannel) throws -> [SyncFrame.Kind] {
        var kinds: [SyncFrame.Kind] = []
        while let out = try channel.readOutbound(as: SyncOutbound.self) {
            if case .frame(let f) = out { kinds.append(f.kind) }
        }
        return kinds
    }

    @Test("between BUNDLE_STREAM_BEGIN and BUNDLE_STREAM_END a PING follows each whole interval without a frame; its PONG is taken, one nobody owes is not")
    func pingsWhileStreaming() throws {
        let count = StreamKeepalive.Count()
        let channel = EmbeddedChannel(handler: StreamKeepalive(interval: .seconds(30), count: count))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        // Before a stream: nothing, however long.
        channel.embeddedEventLoop.advanceTime(by: .seconds(300))
        #expect(try Self.written(channel).isEmpty)

        try channel.writeOutbound(SyncOutbound.frame(Self.frame(.bundleStreamBegin)))
        #expect(try Self.written(channel) == [.bundleStreamBegin])
        // The first interval follows the begin: no PING; the second is whole: one.
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(try Self.written(channel).isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(try Self.written(channel) == [.ping])
        // A part within the next interval: no PING at its end.
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        try channel.writeOutbound(SyncOutbound.frame(Self.frame(.bundlePart)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        #expect(try Self.written(channel) == [.bundlePart])
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(try Self.written(channel) == [.ping, .ping])
        #expect(count.pings == 3)

        // The three PONGs are taken here; a fourth reaches the session.
        for _ in 0..<4 { try channel.writeInbound(SyncInbound.frame(Self.frame(.pong))) }
        var passed = 0
        while let m = try channel.readInbound(as: SyncInbound.self) {
            if case .frame(let f) = m, f.kind == .pong { passed += 1 }
        }
        #expect(passed == 1)

        // After the end: no more PINGs (the acknowledgement is the server's to send).
        try channel.writeOutbound(SyncOutbound.frame(Self.frame(.bundleStreamEnd)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(600))
        #expect(try Self.written(channel) == [.bundleStreamEnd])
        #expect(count.pings == 3)
    }
}
