import Foundation
import GRDB
import NIOCore
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

/// One hostile reply: which client message it answers, and what the node's error must say.
struct HostileCase: CustomStringConvertible, Sendable {
    var name: String
    /// The client message whose reply is replaced (`HOUSEHOLD_REQUEST`: a household call, else a sync).
    var answers: SyncFrame.Kind
    var reply: HostileServer.Answer
    /// Text the node's error message contains (the member it names).
    var says: String
    var code: SyncProtocolError.Code
    var description: String { name }

    /// Every refused vector of `replies.json`, sent where its kind is a reply (other kinds instead of `CHAIN_STATUS`).
    static func vectors() throws -> [HostileCase] {
        try ReplyVectors.load().cases.compactMap { c in
            // RESTORE_BUNDLE, RESTORE_STREAM and RESTORE_STATE answer only a restore (HostileRestoreTests).
            guard !c.frame.hasPrefix("RESTORE_"), let error = c.error, let code = SyncProtocolError.Code(rawValue: error), let field = c.field,
                  let kind = SyncFrame.Kind.allCases.first(where: { $0.name == c.frame }) else { return nil }
            let answers: SyncFrame.Kind = switch kind {
            case .authOK: .auth
            case .bundleAck: .bundleEnd
            case .household: .householdRequest
            default: .chainStatusRequest
            }
            let payload = Array(c.payload.utf8)
            return HostileCase(name: "vector \(c)", answers: answers, reply: { _, _ in [SyncFrame(kind: kind, payload: ByteBuffer(bytes: payload))] },
                               says: field, code: code)
        }
    }

    /// Replies that decode but do not fit what the node sent or holds.
    static let semantic: [HostileCase] = {
        let other = String(repeating: "b", count: 64)
        func status(_ seq: Int, _ hash: String?, chain: String? = nil) -> HostileServer.Answer {
            { m, _ in
                guard case .chainStatusRequest(let r) = m else { return [] }
                return [try! .json(.chainStatus, .object(["device_chain_hash": .string(chain ?? r.deviceChainHash), "last_sequence": .int(seq),
                                                          "last_manifest_hash": .optional(hash)]))]
            }
        }
        return [
            HostileCase(name: "CHAIN_STATUS beyond the node's observations", answers: .chainStatusRequest, reply: status(5, other),
                        says: "holds 5 bundles of this chain but this node has only 2", code: .divergence),
            HostileCase(name: "CHAIN_STATUS at 2^53-1", answers: .chainStatusRequest, reply: status(9_007_199_254_740_991, other),
                        says: "holds 9007199254740991 bundles", code: .divergence),
            HostileCase(name: "CHAIN_STATUS with another bundle 1", answers: .chainStatusRequest, reply: status(1, other),
                        says: "the server's bundle 1 of this chain differs", code: .divergence),
            HostileCase(name: "CHAIN_STATUS of another chain", answers: .chainStatusRequest, reply: status(0, nil, chain: other),
                        says: "CHAIN_STATUS.device_chain_hash", code: .malformedFrame),
            HostileCase(name: "PONG instead of CHAIN_STATUS", answers: .chainStatusRequest, reply: { _, _ in [SyncFrame(kind: .pong, payload: ByteBuffer())] },
                        says: "expected CHAIN_STATUS, got PONG", code: .unexpectedMessage),
            HostileCase(name: "BUNDLE_ACK of the next sequence", answers: .bundleEnd, reply: { _, b in [HostileServer.ack(b!.sequence + 1, b!.manifestHash, "applied")] },
                        says: "BUNDLE_ACK.sequence: 2 is not the bundle just sent (1)", code: .malformedFrame),
            HostileCase(name: "BUNDLE_ACK of another manifest hash", answers: .bundleEnd, reply: { _, b in [HostileServer.ack(b!.sequence, other, "applied")] },
                        says: "BUNDLE_ACK.manifest_hash", code: .malformedFrame),
            HostileCase(name: "BUNDLE_ACK with status ok", answers: .bundleEnd, reply: { _, b in [HostileServer.ack(b!.sequence, b!.manifestHash, "ok")] },
                        says: "BUNDLE_ACK.status", code: .malformedFrame),
            HostileCase(name: "BUNDLE_ACK sequence 1e300", answers: .bundleEnd,
                        reply: { _, b in [HostileServer.raw(.bundleAck, "{\"manifest_hash\":\"\(b!.manifestHash)\",\"sequence\":1e+300,\"status\":\"applied\"}")] },
                        says: "BUNDLE_ACK.sequence", code: .malformedFrame),
            HostileCase(name: "BUNDLE_ACK sequence -1", answers: .bundleEnd,
                        reply: { _, b in [HostileServer.raw(.bundleAck, "{\"manifest_hash\":\"\(b!.manifestHash)\",\"sequence\":-1,\"status\":\"applied\"}")] },
                        says: "BUNDLE_ACK.sequence", code: .malformedFrame),
            HostileCase(name: "BUNDLE_ACK sequence \"1\"", answers: .bundleEnd,
                        reply: { _, b in [HostileServer.raw(.bundleAck, "{\"manifest_hash\":\"\(b!.manifestHash)\",\"sequence\":\"1\",\"status\":\"applied\"}")] },
                        says: "BUNDLE_ACK.sequence", code: .malformedFrame),
            HostileCase(name: "PONG instead of BUNDLE_ACK", answers: .bundleEnd, reply: { _, _ in [SyncFrame(kind: .pong, payload: ByteBuffer())] },
                        says: "expected BUNDLE_ACK, got PONG", code: .unexpectedMessage),
            HostileCase(name: "ERROR with an unknown code instead of BUNDLE_ACK", answers: .bundleEnd,
                        reply: { _, _ in [HostileServer.raw(.error, "{\"code\":\"ok\",\"message\":\"applied\",\"retryable\":false,\"sequence\":1}")] },
                        says: "ERROR.code", code: .malformedFrame),
            HostileCase(name: "AUTH_OK naming another device", answers: .auth,
                        reply: { _, _ in [try! .json(.authOK, .object(["device_name": .string("eve"), "server_time": .string("2026-11-28T08:00:00.000Z")]))] },
                        says: "AUTH_OK.device_name", code: .malformedFrame),
            HostileCase(name: "AUTH_OK with a credential in reply to AUTH", answers: .auth,
                        reply: { m, _ in
                            guard case .auth(let r) = m else { return [] }
                            return [try! .json(.authOK, .object(["device_name": .string(r.deviceName), "server_time": .string("2026-11-28T08:00:00.000Z"),
                                                                 "credential": .string(other)]))]
                        },
                        says: "AUTH_OK.credential", code: .malformedFrame),
            HostileCase(name: "CHAIN_STATUS instead of HOUSEHOLD", answers: .householdRequest,
                        reply: { _, _ in [try! .json(.chainStatus, .object(["device_chain_hash": .string(other), "last_sequence": .int(0), "last_manifest_hash": .null]))] },
                        says: "expected HOUSEHOLD, got CHAIN_STATUS", code: .unexpectedMessage),
        ]
    }()
}

@Suite("A node trusts nothing from a server (a hostile server over TLS on 127.0.0.1)", .serialized, .blocksOnTools)
struct HostileServerSyncTests {
    /// The node's bundle_log rows and outbox files: what a hostile reply must never change.
    static func recorded(_ node: NodeArchive, outbox: String) async throws -> [String] {
        let log = try await node.archive.writer.read { db in try Row.fetchAll(db, sql: "SELECT * FROM bundle_log ORDER BY rowid").map { "\($0)" } }
        let files = try FileManager.default.contentsOfDirectory(atPath: outbox).sorted()
        return log + ["outbox:"] + files
    }

    @Test("every hostile reply (the refused vectors and replies that do not fit) is an error naming the member; nothing is recorded; an honest server then gets both bundles")
    func hostileReplies() async throws {
        let home = TempHome()
        try simulate(home, days: 1)
        try simulate(home, days: 1)
        let node = try home.open()
        let outbox = home.root + "/outbox"
        try FileManager.default.createDirectory(atPath: outbox, withIntermediateDirectories: true)
        let before = try await Self.recorded(node, outbox: outbox)
        #expect(before == ["outbox:"])
        let cases = try HostileCase.vectors() + HostileCase.semantic
        #expect(cases.count >= 80)
        try await HostileServer.with { server in
            let e = server.enrollment()
            for c in cases {
                server.answer(HostileServer.replacing(c.answers, c.reply))
                do {
                    if c.answers == .householdRequest {
                        _ = try await SyncClient.household(e, host: "127.0.0.1", port: server.port, type: "t", from: nil, to: nil, clientTime: Date().timeIntervalSince1970)
                    } else {
                        _ = try await SyncClient(node: node, outbox: outbox).sync(e)
                    }
                    Issue.record("\(c): accepted")
                } catch let error as SyncProtocolError {
                    #expect(error.code == c.code, "\(c): \(error.code.rawValue) \(error.message)")
                    #expect(error.message.contains(c.says), "\(c): \(error.message)")
                } catch {
                    Issue.record("\(c): not a protocol error: \(error)")
                }
                #expect(try await Self.recorded(node, outbox: outbox) == before, "\(c) changed what the node recorded")
            }
            // The same node with an honest server: both bundles sent, acknowledged and recorded.
            server.answer(HostileServer.honest)
            let report = try await SyncClient(node: node, outbox: outbox).sync(e)
            #expect(report.sent == 2 && report.lastSequence == 2)
            let logged = try await node.archive.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM bundle_log WHERE direction = 'sent' AND acknowledged_at IS NOT NULL") }
            #expect(logged == 2)
        }
    }

    @Test("a server's ERROR message is shown bounded, with no control or format characters")
    func errorMessage() async throws {
        let home = TempHome()
        try simulate(home, days: 1)
        let node = try home.open()
        try await HostileServer.with { server in
            let hostile = String(repeating: "\u{1B}[2J\u{202E}\u{7}x", count: 20_000)
            server.answer(HostileServer.replacing(.chainStatusRequest) { _, _ in [.error(SyncProtocolError(.busy, hostile))] })
            await #expect {
                _ = try await SyncClient(node: node, outbox: home.root + "/outbox").sync(server.enrollment())
            } throws: { error in
                guard let e = error as? SyncProtocolError else { return false }
                return e.code == .busy && e.message.hasPrefix("server: ?[2J??x") && e.message.unicodeScalars.count <= "server: ".count + SyncLimits.maxShownMessage + 1
                    && !e.message.unicodeScalars.contains { $0.value < 0x20 || $0 == "\u{202E}" }
            }
        }
    }

    @Test("a server that refuses a streamed bundle at its first frame: the node reports the server's error, records nothing and leaves no outbox file; an honest server then gets the bundle")
    func streamRefusedAtOnce() async throws {
        let home = TempHome()
        try simulate(home, days: 1)
        let node = try home.open()
        let outbox = home.root + "/outbox"
        try await HostileServer.with { server in
            server.answer(HostileServer.replacing(.bundleStreamBegin) { _, _ in [.error(SyncProtocolError(.storage, "the disk is full"), sequence: 1)] })
            var client = SyncClient(node: node, outbox: outbox)
            client.partSize = 4096
            await #expect { _ = try await client.sync(server.enrollment()) } throws: { error in
                (error as? SyncProtocolError)?.code == .storage && "\(error)".contains("the disk is full")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: outbox).isEmpty)
            let logged = try await node.archive.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM bundle_log") }
            #expect(logged == 0)
            server.answer(HostileServer.honest)
            let r = try await client.sync(server.enrollment())
            #expect(r.sent == 1)
        }
    }

    @Test("a server that stops answering (after the hello, after a status request, before an acknowledgement) fails the sync with timeout; nothing is recorded")
    func silentServer() async throws {
        let home = TempHome()
        try simulate(home, days: 1)
        let node = try home.open()
        try await HostileServer.with { server in
            for kind in [SyncFrame.Kind.auth, .chainStatusRequest, .bundleEnd] {
                server.answer(HostileServer.replacing(kind) { _, _ in [] })
                var client = SyncClient(node: node, outbox: home.root + "/outbox")
                client.replyTimeout = .seconds(1)
                let start = ContinuousClock.now
                await #expect("\(kind)") { _ = try await client.sync(server.enrollment()) } throws: { error in
                    (error as? SyncProtocolError)?.code == .timeout && "\(error)".contains("did not answer within 1 s")
                }
                #expect(ContinuousClock.now - start < .seconds(10), "\(kind)")
            }
        }
        let logged = try await node.archive.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM bundle_log") }
        #expect(logged == 0)
    }

    @Test("a server hello with flags set is malformed_frame; nothing is recorded")
    func helloFlags() async throws {
        let home = TempHome()
        try simulate(home, days: 1)
        let node = try home.open()
        try await HostileServer.with(helloFlags: 1) { server in
            await #expect { _ = try await SyncClient(node: node, outbox: home.root + "/outbox").sync(server.enrollment()) } throws: { error in
                (error as? SyncProtocolError)?.code == .malformedFrame && "\(error)".contains("the server's hello sets flags 1")
            }
        }
        let logged = try await node.archive.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM bundle_log") }
        #expect(logged == 0)
    }

    @Test("hp-node sync and household against hostile replies: exit status 1, a message naming the member, nothing recorded")
    func throughTheBinary() async throws {
        let home = TempHome()
        try simulate(home, days: 1)
        try await HostileServer.with { server in
            try server.enrollment().save(home.home.keyStore)
            server.answer(HostileServer.replacing(.bundleEnd) { _, b in [HostileServer.ack(b!.sequence + 1, b!.manifestHash, "applied")] })
            let sync = try await Self.hpNodeOffThread(["--home", home.root, "sync"])
            #expect(sync.0 == 1, "\(sync)")
            #expect(sync.2.contains("BUNDLE_ACK.sequence: 2 is not the bundle just sent (1); nothing was recorded"), "\(sync.2)")
            let logged = try await home.open().archive.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM bundle_log") }
            #expect(logged == 0)
            server.answer(HostileServer.replacing(.householdRequest) { _, _ in
                [HostileServer.raw(.household, "{\"chains\":[{\"chain\":\"\(String(repeating: "c", count: 64))\",\"daily\":[],\"lastSyncAt\":1e300,\"visible\":{}}],\"householdSumOfChains\":{},\"possiblySharedSources\":[]}")]
            })
            let household = try await Self.hpNodeOffThread(["--home", home.root, "household"])
            #expect(household.0 == 1, "\(household)")
            #expect(household.2.contains("HOUSEHOLD.chains[0].lastSyncAt: must be Unix seconds in"), "\(household.2)")
        }
    }

    /// Runs the built hp-node on a dispatch thread (the hostile server's tasks keep the cooperative pool).
    static func hpNodeOffThread(_ args: [String]) async throws -> (Int32, String, String) {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try hpNode(args) }) }
        }
    }
}
