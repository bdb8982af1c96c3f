import Foundation
import HealthProbeArchive
import Logging
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
    /// The protocol version the hellos agreed.
    public let version: UInt16
    /// The `PING`s the connection's keepalive sent (`SessionKeepalive`; none without one).
    let keepalive: SessionKeepalive.Count
    public var keepalivePings: Int { keepalive.pings }

    /// Connects to `host:port` over TLS pinned to `fingerprint`, exchanges hellos, runs `body`, closes.
    /// A reply that takes longer than `replyTimeout` fails the connection with `timeout` (`ReplyDeadline`).
    /// `version` is the hello's: 1 for everything but restore and streamed bundles (any server
    /// speaks it), 2 for restore, 3 to stream bundles, 4 for bundle format 2. A server that does
    /// not speak it fails with `protocol_version` (`HelloRefused` with `helloRefusals`, for `preferring`).
    /// `keepalive`: once authenticated, a `PING` after each whole such interval without a frame while no answer is owed (`SessionKeepalive`).
    public static func with<T: Sendable>(host: String, port: Int, fingerprint: String, replyTimeout: TimeAmount = SyncSession.replyTimeout,
                                         version: UInt16 = SyncHello.currentVersion, keepalive: TimeAmount? = nil, helloRefusals: Bool = false,
                                         _ body: (inout SyncSession) async throws -> T) async throws -> T {
        /// The server refused the hello's version: thrown so with `helloRefusals`.
        func refused(_ e: SyncProtocolError) -> any Error { helloRefusals ? HelloRefused(error: e) : e }
        let pings = SessionKeepalive.Count()
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
                        try channel.pipeline.syncOperations.addHandler(ReplyDeadline(limit: replyTimeout, partsAwaitState: version >= SyncHello.streamVersion))
                        // After the deadline: its PINGs are answered messages there, and its PONGs answers.
                        if let keepalive {
                            // At least 100 ms apart: an interval of nothing would tick without end.
                            let interval = max(keepalive, .milliseconds(100))
                            try channel.pipeline.syncOperations.addHandler(SessionKeepalive(interval: interval, count: pings))
                        }
                        return try NIOAsyncChannel<SyncInbound, SyncOutbound>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw SyncProtocolError(.storage, "cannot connect to \(host):\(port): \(error)")
        }
        return try await channel.executeThenClose { inbound, outbound in
            var session = SyncSession(messages: inbound.makeAsyncIterator(), outbound: outbound, version: version, keepalive: pings)
            do {
                try await outbound.write(.hello(SyncHello(version: version)))
                let answer: SyncInbound?
                do { answer = try await session.messages.next() } catch let e as SyncProtocolError where (e.code == .protocolVersion || e.code == .badMagic) && version > 1 {
                    throw refused(SyncProtocolError(.protocolVersion, "the server does not speak sync protocol version \(version)\(version == SyncHello.restoreVersion ? ", which restore needs" : "") (\(e.message)); upgrade hp-server"))
                }
                guard case .hello(let hello)? = answer else {
                    throw SyncProtocolError(.badMagic, "the server did not answer the hello")
                }
                guard hello.version == version else {
                    throw refused(SyncProtocolError(.protocolVersion, "the server answered the hello with version \(hello.version); this node asked for \(version)"))
                }
                guard hello.flags == 0 else {
                    throw SyncProtocolError(.malformedFrame, "the server's hello sets flags \(hello.flags); version \(version) defines none")
                }
            } catch let e as SyncProtocolError {
                throw e
            } catch let e as HelloRefused {
                throw e
            } catch {
                // The TLS handshake failed (a wrong certificate closes the channel under the hello).
                throw Self.tlsError(error, host: host, port: port)
            }
            return try await body(&session)
        }
    }

    /// `attempt` with the hello version `preferred`, and again with each of `fallbacks` lower than
    /// it, in order, while the server refuses the hello (a server that predates the version). The
    /// attempt connects with `helloRefusals`; any other failure, `protocol_version` raised later in
    /// the session included, ends it. The last refusal is thrown as its `protocol_version` error.
    static func preferring<T>(_ preferred: UInt16, else fallbacks: [UInt16], logger: Logger,
                              _ attempt: (UInt16) async throws -> T) async throws -> T {
        var versions = [preferred] + fallbacks.filter { $0 < preferred }
        while true {
            let version = versions.removeFirst()
            do {
                return try await attempt(version)
            } catch let refusal as HelloRefused {
                guard !versions.isEmpty else { throw refusal.error }
                logger.info("the server does not speak protocol version \(version); connecting with version \(versions[0])")
            }
        }
    }

    /// The server refused a hello's version (`with`'s `helloRefusals`).
    struct HelloRefused: Error {
        let error: SyncProtocolError
    }

    /// How long a node waits for any answer: 5 minutes (a server applying a first bundle of a
    /// million samples answers within about two).
    public static let replyTimeout: TimeAmount = .seconds(300)

    static func tlsError(_ e: any Error, host: String, port: Int) -> SyncProtocolError {
        SyncProtocolError(.unauthorized, "TLS with \(host):\(port) failed: the server's certificate does not match the pinned fingerprint, or it does not speak TLS 1.3 (\(e)); check the address, or enroll again with a token from this server")
    }

    /// Sends `frame`. When the server has closed the connection, the `ERROR` it sent before
    /// closing is thrown (a `timeout`, say) instead of the failed write.
    public mutating func send(_ frame: SyncFrame) async throws {
        do { try await outbound.write(.frame(frame)) } catch {
            throw await whyClosed(sending: frame.kind, error)
        }
    }

    /// The error of the `ERROR` among the frames the server sent before it closed, else one
    /// that names the frame whose write failed.
    private mutating func whyClosed(sending kind: SyncFrame.Kind, _ failure: any Error) async -> any Error {
        while let m = try? await messages.next() {
            if case .frame(let f) = m, case .error(let e)? = try? ServerMessage(f) { return e.error }
        }
        return SyncProtocolError(.malformedFrame, "the server closed the connection while this node sent \(kind.name) (\(failure))")
    }

    /// The next message, decoded with every member checked (`ServerMessage`); an
    /// `ERROR` is thrown as the error it carries.
    public mutating func next() async throws -> ServerMessage {
        let m: SyncInbound?
        do { m = try await messages.next() } catch let e as NIOSSLError {
            throw SyncProtocolError(.storage, "the TLS connection failed: \(e)")
        }
        guard let m else { throw SyncProtocolError(.malformedFrame, "the server closed the connection") }
        guard case .frame(let f) = m else { throw SyncProtocolError(.unexpectedMessage, "a second hello from the server") }
        let message = try ServerMessage(f)
        if case .error(let e) = message { throw e.error }
        return message
    }

    /// Sends `frame` and returns the reply.
    public mutating func request(_ frame: SyncFrame) async throws -> ServerMessage {
        try await send(frame)
        return try await next()
    }

    /// The error for a reply of another kind than `expected`.
    static func unexpected(_ reply: ServerMessage, expected: SyncFrame.Kind) -> SyncProtocolError {
        SyncProtocolError(.unexpectedMessage, "expected \(expected.name), got \(reply.kind.name)")
    }

    /// Authenticates with a device credential; returns the server's time as it answered.
    @discardableResult
    public mutating func authenticate(name: String, credential: String, clientTime: Double) async throws -> Double {
        let reply = try await request(.json(.auth, .object(["device_name": .string(name), "credential": .string(credential),
                                                            "client_time": .string(CanonicalDate.string(clientTime))])))
        guard case .authOK(let ok) = reply else { throw Self.unexpected(reply, expected: .authOK) }
        try Self.check(ok, name: name)
        guard ok.credential == nil else { throw SyncProtocolError(.malformedFrame, "AUTH_OK.credential: not expected in the reply to AUTH") }
        return ok.serverTime
    }

    /// `AUTH_OK` must name the device the node sent.
    static func check(_ ok: AuthOK, name: String) throws {
        guard ok.deviceName == name else {
            throw SyncProtocolError(.malformedFrame, "AUTH_OK.device_name: \"\(ShownText.clean(ok.deviceName, maxCharacters: 128))\" is not the name this node sent (\(name))")
        }
    }

    /// `CHAIN_STATUS` of `chain`: the reply must be about that chain.
    public mutating func chainStatus(_ chain: String) async throws -> ChainStatus {
        let reply = try await request(.json(.chainStatusRequest, .object(["device_chain_hash": .string(chain)])))
        guard case .chainStatus(let status) = reply else { throw Self.unexpected(reply, expected: .chainStatus) }
        guard status.deviceChainHash == chain else {
            throw SyncProtocolError(.malformedFrame, "CHAIN_STATUS.device_chain_hash: \(status.deviceChainHash.prefix(16))... is not the chain this node asked about (\(chain.prefix(16))...)")
        }
        return status
    }

    /// The `BUNDLE_ACK` of the bundle just sent: it must carry exactly its `sequence`
    /// and `manifestHash` (the status is one of the documented ones once decoded).
    public mutating func acknowledgement(sequence: Int, manifestHash: String) async throws -> BundleAck.Status {
        let reply = try await next()
        guard case .bundleAck(let ack) = reply else { throw Self.unexpected(reply, expected: .bundleAck) }
        guard ack.sequence == sequence else {
            throw SyncProtocolError(.malformedFrame, "BUNDLE_ACK.sequence: \(ack.sequence) is not the bundle just sent (\(sequence)); nothing was recorded")
        }
        guard ack.manifestHash == manifestHash else {
            throw SyncProtocolError(.malformedFrame, "BUNDLE_ACK.manifest_hash: \(ack.manifestHash.prefix(16))... is not the manifest hash of bundle \(sequence) just sent (\(manifestHash.prefix(16))...); nothing was recorded")
        }
        return ack.status
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
            let reply = try await session.request(.json(.enroll, .object(["device_name": .string(token.name), "enrollment_secret": .string(token.secret),
                                                                        "client_time": .string(CanonicalDate.string(clientTime))])))
            guard case .authOK(let ok) = reply else { throw SyncSession.unexpected(reply, expected: .authOK) }
            try SyncSession.check(ok, name: token.name)
            guard let credential = ok.credential else { throw SyncProtocolError(.malformedFrame, "AUTH_OK.credential: missing from the reply to ENROLL") }
            return NodeEnrollment(address: token.address, fingerprint: token.fingerprint, name: token.name, credential: credential)
        }
    }

    /// The household summary, as the server reports it to an authenticated node (checked as `ServerMessage` decodes it).
    public static func household(_ enrollment: NodeEnrollment, host: String, port: Int, type: String?, from: Double?, to: Double?,
                                 clientTime: Double) async throws -> HouseholdSummary.Report {
        try await SyncSession.with(host: host, port: port, fingerprint: enrollment.fingerprint) { session in
            try await session.authenticate(name: enrollment.name, credential: enrollment.credential, clientTime: clientTime)
            try await session.send(.json(.householdRequest, .object([
                "type": .optional(type), "from": from.map { .string(CanonicalDate.string($0)) } ?? .null,
                "to": to.map { .string(CanonicalDate.string($0)) } ?? .null])))
            let reply = try await session.next()
            guard case .household(let report) = reply else { throw SyncSession.unexpected(reply, expected: .household) }
            return report
        }
    }
}
