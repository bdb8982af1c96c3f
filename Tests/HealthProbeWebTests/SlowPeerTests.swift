import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import NIOPosix
import HTTPTypes
import Testing
import HealthProbeNode
import HealthProbeServer
@testable import HealthProbeWeb

/// Slow and concurrent peers: connection deadlines (on an embedded event loop, then on
/// real TLS connections) and sign-in attempts that take turns.
@Suite("Slow and concurrent peers", .serialized)
struct SlowPeerTests {
    static let limits = WebServer.RequestLimits(header: .seconds(2), body: .seconds(3), idle: .seconds(5))

    @Test("deadlines: the head within `header` of opening, the body within `body` of its head, none while answering, the next request within `idle`")
    func deadlines() throws {
        // A connection that sends nothing is closed at the header deadline.
        let silent = EmbeddedChannel(handler: RequestDeadlines(Self.limits))
        try silent.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        silent.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(silent.isActive)
        silent.embeddedEventLoop.advanceTime(by: .milliseconds(2))
        #expect(!silent.isActive)

        // A head on time, then a body that never ends: closed 3 s after the head.
        let slow = EmbeddedChannel(handler: RequestDeadlines(Self.limits))
        try slow.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        slow.embeddedEventLoop.advanceTime(by: .seconds(1))
        try slow.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .post, scheme: "https", authority: "x", path: "/login")))
        slow.embeddedEventLoop.advanceTime(by: .milliseconds(2500))
        try slow.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "n")))
        #expect(slow.isActive)
        slow.embeddedEventLoop.advanceTime(by: .milliseconds(501))
        #expect(!slow.isActive)

        // A complete request: no limit while the server answers; then the idle limit.
        let ok = EmbeddedChannel(handler: RequestDeadlines(Self.limits))
        try ok.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try ok.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .get, scheme: "https", authority: "x", path: "/")))
        try ok.writeInbound(HTTPRequestPart.end(nil))
        ok.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(ok.isActive)
        try ok.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        try ok.writeOutbound(HTTPResponsePart.end(nil))
        ok.embeddedEventLoop.advanceTime(by: .milliseconds(4999))
        #expect(ok.isActive)
        // The next request in time resets it.
        try ok.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .get, scheme: "https", authority: "x", path: "/")))
        ok.embeddedEventLoop.advanceTime(by: .milliseconds(2999))
        #expect(ok.isActive)
        ok.embeddedEventLoop.advanceTime(by: .milliseconds(2))
        #expect(!ok.isActive)
    }

    /// The limit covers the household's setup too, which the whole suite on two cores was seen to stretch past a minute.
    @Test("200 half-open connections and a request whose body never completes are all closed by the server after their deadlines", .timeLimit(.minutes(3)))
    func halfOpen() async throws {
        try await withHousehold(configure: { $0.requestLimits = .init(header: .seconds(1), body: .seconds(2), idle: .seconds(3)) }) { h in
            // 200 TCP connections that never start TLS.
            var open: [NIOAsyncChannel<ByteBuffer, ByteBuffer>] = []
            for _ in 0..<200 {
                open.append(try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: h.webPort) { ch in
                    ch.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: ch) }
                })
            }
            let start = ContinuousClock.now
            // One TLS request that promises 100 bytes of body and sends 10.
            let b = h.browser()
            async let slowBody = b.request("POST", "/login", body: "name=ann&p", headers: [], declaredLength: 100)
            // Every half-open connection ends (the server closes it): reading gives end of stream.
            var closed = 0
            for channel in open {
                try await channel.executeThenClose { inbound, _ in
                    do { for try await _ in inbound {} } catch {}
                    closed += 1
                }
            }
            #expect(closed == 200)
            #expect(ContinuousClock.now - start < .seconds(15))
            // The slow body's connection is closed without an answer.
            let answered: HTTPReply?
            do { answered = try await slowBody } catch { answered = nil }
            #expect(answered == nil, "\(answered?.status ?? 0)")
            #expect(ContinuousClock.now - start < .seconds(15))
        }
    }

    @Test("concurrent wrong passwords for one name take turns; one's own success never shortens the wait for another name")
    func concurrentGuesses() async throws {
        try await withHousehold(configure: { $0.signInBase = 0.05; $0.signInMaximum = 0.4 }) { h in
            // 8 wrong guesses at once: they wait their turn (0.05 + 0.1 + 0.2 + 5 x 0.4 s at least).
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<8 {
                    group.addTask { try await h.browser().signIn("ann", "wrong-password-\(i)-xx").status }
                }
                for try await status in group { #expect(status == 401) }
            }
            let elapsed = ContinuousClock.now - start
            #expect(elapsed >= .milliseconds(2300), "\(elapsed)")
            // From this address, guesses at bob; then a correct sign-in of ann's own; the next guess at cat still waits the peer's full delay.
            let other = h.browser()
            for i in 0..<3 { _ = try await other.signIn("bob", "wrong-password-\(i)-yy") }
            #expect(try await other.signIn("ann", Household.password).status == 303)
            let guess = ContinuousClock.now
            #expect(try await h.browser().signIn("cat", "wrong-password-zz").status == 401)
            #expect(ContinuousClock.now - guess >= .milliseconds(390))
        }
    }
}
