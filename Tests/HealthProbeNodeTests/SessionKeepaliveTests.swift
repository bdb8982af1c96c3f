import NIOCore
import NIOEmbedded
import Testing
import HealthProbeProtocol
@testable import HealthProbeNode

/// The node's keepalive in a sync session (`SessionKeepalive`), on an embedded event loop.
@Suite("Session keepalive")
struct SessionKeepaliveTests {
    static func frame(_ kind: SyncFrame.Kind) -> SyncFrame { SyncFrame(kind: kind, payload: ByteBuffer()) }

    /// The kinds of the frames written so far.
    static func written(_ channel: EmbeddedChannel) throws -> [SyncFrame.Kind] {
        var kinds: [SyncFrame.Kind] = []
        while let out = try channel.readOutbound(as: SyncOutbound.self) {
            if case .frame(let f) = out { kinds.append(f.kind) }
        }
        return kinds
    }

    /// Frames that reached the session.
    static func read(_ channel: EmbeddedChannel) throws -> [SyncFrame.Kind] {
        var kinds: [SyncFrame.Kind] = []
        while let m = try channel.readInbound(as: SyncInbound.self) {
            if case .frame(let f) = m { kinds.append(f.kind) }
        }
        return kinds
    }

    @Test("no PING before AUTH_OK, nor while an answer is owed; after each whole interval without a frame once accepted; its PONG is taken, one nobody owes is not")
    func pings() throws {
        let count = SessionKeepalive.Count()
        let channel = EmbeddedChannel(handler: SessionKeepalive(interval: .seconds(30), count: count))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        // The hello and AUTH, slow to be answered: nothing else is sent (the server reads only AUTH then).
        try channel.writeOutbound(SyncOutbound.hello(SyncHello(version: SyncHello.streamVersion)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(100))
        try channel.writeInbound(SyncInbound.hello(SyncHello(version: SyncHello.streamVersion)))
        try channel.writeOutbound(SyncOutbound.frame(Self.frame(.auth)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(100))
        #expect(try Self.written(channel) == [.auth])
        try channel.writeInbound(SyncInbound.frame(Self.frame(.authOK)))

        // Accepted: the first interval follows AUTH_OK; the second is whole: a PING.
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(try Self.written(channel).isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(try Self.written(channel) == [.ping])
        // Its PONG not come yet: no second PING.
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(try Self.written(channel).isEmpty)
        try channel.writeInbound(SyncInbound.frame(Self.frame(.pong)))

        // A stream: parts keep the connection busy; a slow build between them gets PINGs.
        try channel.writeOutbound(SyncOutbound.frame(Self.frame(.bundleStreamBegin)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        try channel.writeOutbound(SyncOutbound.frame(Self.frame(.bundlePart)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        #expect(try Self.written(channel) == [.bundleStreamBegin, .bundlePart])
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(try Self.written(channel) == [.ping])
        try channel.writeInbound(SyncInbound.frame(Self.frame(.pong)))

        // The end sent, its acknowledgement owed: no PING while the server applies the bundle.
        try channel.writeOutbound(SyncOutbound.frame(Self.frame(.bundleStreamEnd)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(600))
        #expect(try Self.written(channel) == [.bundleStreamEnd])
        try channel.writeInbound(SyncInbound.frame(Self.frame(.bundleAck)))
        // A PONG nobody owes reaches the session (which refuses it); the acknowledgement does.
        try channel.writeInbound(SyncInbound.frame(Self.frame(.pong)))
        #expect(try Self.read(channel) == [.authOK, .bundleAck, .pong])
        #expect(count.pings == 2)
    }
}

/// The deadline and the keepalive together, in the order `SyncSession.with` adds them.
@Suite("Reply deadline with keepalive")
struct DeadlineWithKeepaliveTests {
    @Test("a PING then BUNDLE_STREAM_END: the PONG is counted by the deadline and taken by the keepalive, the acknowledgement reaches the session, and the wait for it runs from the PONG")
    func together() throws {
        let count = SessionKeepalive.Count()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ReplyDeadline(limit: .seconds(100)))
        try channel.pipeline.syncOperations.addHandler(SessionKeepalive(interval: .seconds(30), count: count))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try channel.writeOutbound(SyncOutbound.frame(SessionKeepaliveTests.frame(.auth)))
        try channel.writeInbound(SyncInbound.frame(SessionKeepaliveTests.frame(.authOK)))
        #expect(try SessionKeepaliveTests.read(channel) == [.authOK])
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(try SessionKeepaliveTests.written(channel) == [.auth, .ping])
        try channel.writeOutbound(SyncOutbound.frame(SessionKeepaliveTests.frame(.bundleStreamEnd)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(50))
        try channel.writeInbound(SyncInbound.frame(SessionKeepaliveTests.frame(.pong)))
        #expect(try SessionKeepaliveTests.read(channel).isEmpty)
        // 100 s from the PONG, not from the PING: alive at 99 s, closed past 100 s.
        channel.embeddedEventLoop.advanceTime(by: .seconds(99))
        #expect(channel.isActive)
        try channel.writeInbound(SyncInbound.frame(SessionKeepaliveTests.frame(.bundleAck)))
        #expect(try SessionKeepaliveTests.read(channel) == [.bundleAck])
        #expect(try SessionKeepaliveTests.written(channel) == [.bundleStreamEnd])
        // Nothing owed: the keepalive pings on, and its PONG is taken.
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(try SessionKeepaliveTests.written(channel) == [.ping])
        try channel.writeInbound(SyncInbound.frame(SessionKeepaliveTests.frame(.pong)))
        #expect(try SessionKeepaliveTests.read(channel).isEmpty)
        #expect(count.pings == 2)
        // A PING the server never answers: the deadline closes the connection, and the keepalive stops.
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(try SessionKeepaliveTests.written(channel) == [.ping])
        channel.embeddedEventLoop.advanceTime(by: .seconds(101))
        #expect(!channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(600))
        #expect(count.pings == 3)
    }
}
