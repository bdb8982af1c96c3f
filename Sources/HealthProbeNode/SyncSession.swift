import Foundation
import HealthProbeArchive
import HealthProbeProtocol
import HealthProbeCanonical
import NIOCore
import NIOPosix
import NIOSSL

/// A client's connection to a server: TLS with the pinned certificate, the
/// hello exchanged, then frames. Used by sync, enrollment and household.
public struct SyncSession {
    var messages: NIOAsyncChannelInboundStream<SyncInbound>.AsyncIterator
    let outbound: NIOAsyncChannelOutboundWriter<SyncOutbound>

    /// Connects to `host:port` over TLS pinned to `fingerprint`, exchanges hellos, runs `body`, closes.
    public static func with<T: Sendable>(host: String, port: Int, fingerprint: String,
                                         _ body: (inout SyncSession) async throws -> T) async throws -> T {
        let tls = try PinnedTLS.clientContext()
        let channel: NIOAsyncChannel<SyncInbound, SyncOutbound>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.seconds(10))
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(try PinnedTLS.handler(context: tls, fingerprint: fingerprint))
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(SyncConnectionDecoder()))
                        try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(SyncConnectionEncoder()))
                        return try NIOAsyncChannel<SyncInbound, SyncOutbound>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw SyncProtocolError(.storage, "cannot connect to \(host):\(port): \(error)")
        }
        return try await channel.executeThenClose { inbound, outbound in
            var session = SyncSession(messages: inbound.makeAsyncIterator(), outbound: outbound)
            do {
                try await outbound.write(.hello(SyncHello()))
                guard case .hello? = try await session.messages.next() else {
                    throw SyncProtocolError(.badMagic, "the server did not answer the hello")
                }
            } catch let e as SyncProtocolError {
                throw e
            } catch {
                // The TLS handshake failed (a wrong certificate closes the channel under the hello).
                throw Self.tlsError(error, host: host, port: port)
            }
            return try await body(&session)
        }
    }

    static func tlsError(_ e: any Error, host: String, port: Int) -> SyncProtocolError {
        SyncProtocolError(.unauthorized, "TLS with \(host):\(port) failed: the server's certificate does not match the pinned fingerprint, or it does not speak TLS 1.3 (\(e)); check the address, or enroll again with a token from this server")
    }

    public mutating func send(_ frame: SyncFrame) async throws { try await outbound.write(.frame(frame)) }

    /// The next frame; an `ERROR` frame is thrown as the error it carries.
    public mutating func next() async throws -> SyncFrame {
        let m: SyncInbound?
        do { m = try await messages.next() } catch let e as NIOSSLError {
            throw SyncProtocolError(.storage, "the TLS connection failed: \(e)")
        }
        guard let m else { throw SyncProtocolError(.malformedFrame, "the server closed the connection") }
        guard case .frame(let f) = m else { throw SyncProtocolError(.unexpectedMessage, "a second hello from the server") }
        if f.kind == .error { throw SyncClient.serverError(f) }
        return f
    }

    /// Sends `frame` and returns the reply, which must be of `kind`.
    public mutating func request(_ frame: SyncFrame, expect kind: SyncFrame.Kind) async throws -> [String: JSONValue] {
        try await send(frame)
        let reply = try await next()
        guard reply.kind == kind else { throw SyncProtocolError(.unexpectedMessage, "expected \(kind), got \(reply.kind)") }
        return try reply.jsonObject()
    }

    /// Authenticates with a device credential; returns the server's time as it answered.
    @discardableResult
    public mutating func authenticate(name: String, credential: String, clientTime: Double) async throws -> Double? {
        let ok = try await request(.json(.auth, .object(["device_name": .string(name), "credential": .string(credential),
                                                         "client_time": .string(CanonicalDate.string(clientTime))])), expect: .authOK)
        if case .string(let t)? = ok["server_time"] { return CanonicalDate.parse(t) }
        return nil
    }
}

extension SyncClient {
    /// Redeems an enrollment token with its server: TLS pinned to the token's
    /// fingerprint, `ENROLL` with the one-time secret, and the credential the
    /// server issues. The caller stores the result in the node's key directory.
    public static func enroll(token: EnrollmentToken, clientTime: Double) async throws -> NodeEnrollment {
        guard let (host, port) = SyncAddress.parse(token.address) else {
            throw SyncProtocolError(.malformedFrame, "the token's address \(token.address) is not HOST:PORT")
        }
        return try await SyncSession.with(host: host, port: port, fingerprint: token.fingerprint) { session in
            let ok = try await session.request(.json(.enroll, .object(["device_name": .string(token.name), "enrollment_secret": .string(token.secret),
                                                                     "client_time": .string(CanonicalDate.string(clientTime))])), expect: .authOK)
            guard case .string(let credential)? = ok["credential"], ArchiveHasher.isLowerHex(credential.utf8) else {
                throw SyncProtocolError(.malformedFrame, "the server's AUTH_OK carries no credential")
            }
            return NodeEnrollment(address: token.address, fingerprint: token.fingerprint, name: token.name, credential: credential)
        }
    }

    /// The household summary, as the server reports it to an authenticated node.
    public static func household(_ enrollment: NodeEnrollment, host: String, port: Int, type: String?, from: Double?, to: Double?,
                                 clientTime: Double) async throws -> HouseholdSummary.Report {
        try await SyncSession.with(host: host, port: port, fingerprint: enrollment.fingerprint) { session in
            try await session.authenticate(name: enrollment.name, credential: enrollment.credential, clientTime: clientTime)
            try await session.send(.json(.householdRequest, .object([
                "type": .optional(type), "from": from.map { .string(CanonicalDate.string($0)) } ?? .null,
                "to": to.map { .string(CanonicalDate.string($0)) } ?? .null])))
            let reply = try await session.next()
            guard reply.kind == .household else { throw SyncProtocolError(.unexpectedMessage, "expected HOUSEHOLD, got \(reply.kind)") }
            do { return try HouseholdSummary.fromWire(reply.payload.readableBytesView) } catch {
                throw SyncProtocolError(.malformedFrame, "the HOUSEHOLD reply does not decode: \(error)")
            }
        }
    }
}
