import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import HealthProbeCanonical
import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode

/// A server on 127.0.0.1 that speaks the sync protocol correctly (TLS with its own
/// certificate, the hello, frames) and answers each client message as its current
/// `Answer` says: honestly by default, with hostile values where a test says so.
struct HostileServer: Sendable {
    /// The frames to send for a client message (none: read on); the second argument is
    /// the last `BUNDLE_BEGIN` of the connection.
    typealias Answer = @Sendable (ClientMessage, BundleBegin?) -> [SyncFrame]

    let port: Int
    let fingerprint: String
    private let answer: NIOLockedValueBox<Answer>

    /// Answers from now on as `answer` says.
    func answer(_ answer: @escaping Answer) { self.answer.withLockedValue { $0 = answer } }

    /// An enrollment of `name` with this server (any credential: it accepts every one).
    func enrollment(_ name: String = "phone") -> NodeEnrollment {
        NodeEnrollment(address: "127.0.0.1:\(port)", fingerprint: fingerprint, name: name, credential: String(repeating: "e", count: 64))
    }

    /// Runs a hostile server for the duration of `body`; its hello carries `helloFlags`.
    static func with(helloFlags: UInt16 = 0, _ body: (HostileServer) async throws -> Void) async throws {
        let identity = try ServerIdentity.generate()
        let tls = try identity.serverContext()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(SyncConnectionDecoder()))
                    try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(SyncConnectionEncoder()))
                    return try NIOAsyncChannel<SyncInbound, SyncOutbound>(wrappingChannelSynchronously: channel)
                }
            }
        let box = NIOLockedValueBox<Answer>(honest)
        let server = HostileServer(port: listener.channel.localAddress?.port ?? 0, fingerprint: identity.fingerprint, answer: box)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await listener.executeThenClose { connections in
                    // One connection at a time: the node opens one per sync or household call.
                    for try await connection in connections { await serve(connection, box, hello: SyncHello(flags: helloFlags)) }
                }
            }
            defer { group.cancelAll() }
            try await body(server)
        }
    }

    static func serve(_ connection: NIOAsyncChannel<SyncInbound, SyncOutbound>, _ box: NIOLockedValueBox<Answer>, hello: SyncHello) async {
        try? await connection.executeThenClose { inbound, outbound in
            var begun: BundleBegin?
            for try await m in inbound {
                switch m {
                case .hello(let theirs):
                    // The client's version, as a real server answers.
                    try await outbound.write(.hello(SyncHello(version: theirs.version, flags: hello.flags)))
                case .frame(let f):
                    let message = try ClientMessage(f)
                    if case .bundleBegin(let b) = message { begun = b }
                    // A stream (version 3) is declared at its end.
                    if case .bundleStreamEnd(let b) = message { begun = b }
                    let answer = box.withLockedValue { $0 }
                    for reply in answer(message, begun) { try await outbound.write(.frame(reply)) }
                }
            }
        }
    }

    /// What a real server would answer: a new chain, every bundle applied, an empty household.
    static let honest: Answer = { message, begun in
        switch message {
        case .auth(let r):
            return [try! .json(.authOK, .object(["device_name": .string(r.deviceName), "server_time": .string(CanonicalDate.string(Date().timeIntervalSince1970))]))]
        case .enroll(let r):
            return [try! .json(.authOK, .object(["device_name": .string(r.deviceName), "server_time": .string(CanonicalDate.string(Date().timeIntervalSince1970)),
                                                 "credential": .string(String(repeating: "e", count: 64))]))]
        case .chainStatusRequest(let r):
            return [try! .json(.chainStatus, .object(["device_chain_hash": .string(r.deviceChainHash), "last_sequence": .int(0), "last_manifest_hash": .null]))]
        case .bundleEnd, .bundleStreamEnd:
            guard let begun else { return [] }
            return [ack(begun.sequence, begun.manifestHash, "applied")]
        case .householdRequest:
            let report = HouseholdSummary.Report(chains: [], householdSumOfChains: [:], possiblySharedSources: [])
            return [SyncFrame(kind: .household, payload: ByteBuffer(bytes: try! HouseholdSummary.wireJSON(report)))]
        case .ping:
            return [SyncFrame(kind: .pong, payload: ByteBuffer())]
        case .bundleBegin, .bundlePart, .bundleStreamBegin:
            return []
        case .restoreRequest(let r):
            return [.error(SyncProtocolError(.notFound, "no bundle \(r.sequence)"), sequence: nil)]
        }
    }

    /// Honest, except that the reply to a client message of `kind` is `reply` (to `BUNDLE_END`:
    /// to the end of a streamed bundle too).
    static func replacing(_ kind: SyncFrame.Kind, _ reply: @escaping Answer) -> Answer {
        { message, begun in
            let k = message.kind == .bundleStreamEnd && kind == .bundleEnd ? .bundleEnd : message.kind
            return k == kind ? reply(message, begun) : honest(message, begun)
        }
    }

    /// A `BUNDLE_ACK` in canonical form.
    static func ack(_ sequence: Int, _ hash: String, _ status: String) -> SyncFrame {
        try! .json(.bundleAck, .object(["sequence": .int(sequence), "manifest_hash": .string(hash), "status": .string(status)]))
    }

    /// A frame of `kind` carrying `text` as it is.
    static func raw(_ kind: SyncFrame.Kind, _ text: String) -> SyncFrame { SyncFrame(kind: kind, payload: ByteBuffer(string: text)) }
}
