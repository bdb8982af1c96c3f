import Foundation
import NIOCore
import Testing
import HealthProbeCanonical
@testable import HealthProbeProtocol
import HealthProbeTestSupport

/// A frame of the kind named `name` (`CHAIN_STATUS`) carrying `payload`.
func replyFrame(_ name: String, _ payload: [UInt8]) throws -> SyncFrame {
    let kind = try #require(SyncFrame.Kind.allCases.first { $0.name == name }, "unknown frame \(name)")
    return SyncFrame(kind: kind, payload: ByteBuffer(bytes: payload))
}

/// The error decoding `frame` as a server reply throws, or nil when it decodes.
func replyError(_ frame: SyncFrame) -> SyncProtocolError? {
    do { _ = try ServerMessage(frame); return nil } catch let e as SyncProtocolError { return e } catch {
        Issue.record("not a protocol error: \(error)")
        return nil
    }
}

@Suite("Typed server replies (Protocol/vectors/replies.json)")
struct ReplyTests {
    static let hash = String(repeating: "a", count: 64)
    static let chain = String(repeating: "c", count: 64)

    @Test("every reply vector decodes, or is refused with its code and a message naming its member", arguments: try ReplyVectors.load().cases)
    func vector(_ c: ReplyVectors.Case) throws {
        let e = replyError(try replyFrame(c.frame, Array(c.payload.utf8)))
        #expect(e?.code.rawValue == c.error, "\(c): \(e?.message ?? "accepted")")
        if let field = c.field, let e { #expect(e.message.contains(field), "\(c): \(e.message)") }
    }

    @Test("the vectors hold both outcomes for every reply, and at least 60 refusals")
    func coverage() throws {
        let cases = try ReplyVectors.load().cases
        for frame in ["AUTH_OK", "CHAIN_STATUS", "BUNDLE_ACK", "PONG", "HOUSEHOLD", "ERROR", "RESTORE_BUNDLE", "RESTORE_STREAM", "RESTORE_STATE"] {
            #expect(cases.contains { $0.frame == frame && $0.error == nil }, "\(frame) has no valid vector")
            #expect(cases.contains { $0.frame == frame && $0.error != nil }, "\(frame) has no refused vector")
        }
        #expect(cases.filter { $0.error != nil }.count >= 60)
    }

    @Test("CHAIN_STATUS.last_sequence and BUNDLE_ACK.sequence: exact integers in range only, every double near the edges, no trap")
    func numbersNearTheEdges() throws {
        let edges: [Double] = [0, 1, -1, -0.5, 0.5, 1.5, 9_007_199_254_740_991, 9_007_199_254_740_992, 9.223372036854775808e18, -9.223372036854775808e18,
                               1.8446744073709552e19, 1e300, -1e300, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude]
        for d in edges {
            let exact = d == d.rounded() && d <= 9_007_199_254_740_991
            let status = try CanonicalJSON.encode(.object(["device_chain_hash": .string(Self.chain), "last_sequence": .number(d),
                                                           "last_manifest_hash": d == 0 ? .null : .string(Self.hash)]))
            let s = replyError(SyncFrame(kind: .chainStatus, payload: ByteBuffer(bytes: status)))
            #expect((s == nil) == (exact && d >= 0), "last_sequence \(d): \(s?.message ?? "accepted")")
            if let s { #expect(s.message.contains("CHAIN_STATUS.last_sequence"), "\(s.message)") }
            let ack = try CanonicalJSON.encode(.object(["sequence": .number(d), "manifest_hash": .string(Self.hash), "status": .string("applied")]))
            let a = replyError(SyncFrame(kind: .bundleAck, payload: ByteBuffer(bytes: ack)))
            #expect((a == nil) == (exact && d >= 1), "sequence \(d): \(a?.message ?? "accepted")")
            if let a { #expect(a.message.contains("BUNDLE_ACK.sequence"), "\(a.message)") }
        }
    }

    @Test("replies as the server writes them (SyncFrame.json, SyncFrame.error) decode to what it meant")
    func serverEncodings() throws {
        let now = 1_764_316_800.125
        guard case .authOK(let a) = try ServerMessage(.json(.authOK, .object(["device_name": .string("phone"), "server_time": .string(CanonicalDate.string(now))]))) else {
            Issue.record("not AUTH_OK"); return
        }
        #expect(a.deviceName == "phone" && a.serverTime == now && a.credential == nil)
        guard case .authOK(let enrolled) = try ServerMessage(.json(.authOK, .object(["device_name": .string("phone"), "server_time": .string(CanonicalDate.string(now)),
                                                                                      "credential": .string(Self.hash)]))) else { Issue.record("not AUTH_OK"); return }
        #expect(enrolled.credential == Self.hash)
        guard case .chainStatus(let s) = try ServerMessage(.json(.chainStatus, .object(["device_chain_hash": .string(Self.chain), "last_sequence": .int(7),
                                                                                        "last_manifest_hash": .optional(Self.hash)]))) else { Issue.record("not CHAIN_STATUS"); return }
        #expect(s.deviceChainHash == Self.chain && s.lastSequence == 7 && s.lastManifestHash == Self.hash)
        guard case .chainStatus(let fresh) = try ServerMessage(.json(.chainStatus, .object(["device_chain_hash": .string(Self.chain), "last_sequence": .int(0),
                                                                                            "last_manifest_hash": .optional(nil as String?)]))) else { Issue.record("not CHAIN_STATUS"); return }
        #expect(fresh.lastSequence == 0 && fresh.lastManifestHash == nil)
        for status in BundleAck.Status.allCases {
            guard case .bundleAck(let ack) = try ServerMessage(.json(.bundleAck, .object(["sequence": .int(3), "manifest_hash": .string(Self.hash),
                                                                                          "status": .string(status.rawValue)]))) else { Issue.record("not BUNDLE_ACK"); return }
            #expect(ack.sequence == 3 && ack.manifestHash == Self.hash && ack.status == status)
        }
        #expect(try ServerMessage(SyncFrame(kind: .pong, payload: ByteBuffer())) == .pong)
        let codes: [SyncProtocolError.Code] = [.badMagic, .protocolVersion, .frameTooLarge, .malformedFrame, .unexpectedMessage, .inflateLimit, .bundleInvalid,
                                               .outOfOrder, .divergence, .storage, .busy, .timeout, .unauthorized, .forbidden]
        for code in codes {
            for sequence in [nil, 4] as [Int?] {
                guard case .error(let e) = try ServerMessage(.error(SyncProtocolError(code, "why: line 9"), sequence: sequence)) else { Issue.record("not ERROR"); return }
                #expect(e.code == code && e.message == "why: line 9" && e.retryable == code.retryable && e.sequence == sequence)
                #expect(e.error.code == code && e.error.message == "server: why: line 9")
            }
        }
    }

    @Test("ERROR: the message is kept to 1000 characters, control and format characters shown as ?")
    func errorMessageShown() throws {
        let long = String(repeating: "é", count: 5000)
        guard case .error(let e) = try ServerMessage(.error(SyncProtocolError(.busy, long))) else { Issue.record("not ERROR"); return }
        #expect(e.message.unicodeScalars.count == SyncLimits.maxShownMessage + 1 && e.message.hasSuffix("…"))
        guard case .error(let c) = try ServerMessage(.error(SyncProtocolError(.busy, "a\u{1B}[2J\u{7}b\u{202E}c\nd\u{0}e\u{85}f"))) else { Issue.record("not ERROR"); return }
        #expect(c.message == "a?[2J?b?c?d?e?f")
    }

    @Test("HOUSEHOLD: the server's encoding (Foundation's JSONEncoder, nil members absent) decodes to the same report, at the edges of every range")
    func householdRoundTrip() throws {
        let c = String(repeating: "c", count: 64), d = String(repeating: "d", count: 64)
        let maxCount = 9_007_199_254_740_991
        let dates = SyncLimits.householdDates
        let report = HouseholdSummary.Report(
            chains: [
                HouseholdSummary.Chain(chain: c, deviceName: "phone/é \"x\"", clockOffsetSeconds: SyncLimits.clockOffsets.lowerBound, lastObservationID: Int64(maxCount),
                                       lastObservedAt: dates.lowerBound, lastSyncAt: dates.upperBound.nextDown, visible: ["t": maxCount, "u": 0],
                                       daily: [HouseholdSummary.Daily(typeIdentifier: "t", bucketStart: dates.lowerBound, bucketEnd: dates.upperBound.nextDown,
                                                                      visibleRecordCount: maxCount, valueSum: -.greatestFiniteMagnitude, valueMax: 1e-300,
                                                                      sourceRevision: "com.apple.health iPhone 18.1", aggregateHash: String(repeating: "f", count: 64))]),
                HouseholdSummary.Chain(chain: d, lastObservationID: nil, lastObservedAt: nil, lastSyncAt: nil, visible: [:],
                                       daily: [HouseholdSummary.Daily(typeIdentifier: "t", bucketStart: 0, bucketEnd: 86_400, visibleRecordCount: 0, valueSum: nil,
                                                                      valueMax: nil, sourceRevision: nil, aggregateHash: nil)]),
            ],
            householdSumOfChains: ["t": maxCount, "u": 0],
            possiblySharedSources: [HouseholdSummary.SharedSources(chains: [c, d], typeIdentifier: "t", identicalStrictFingerprints: maxCount)])
        let wire = try HouseholdSummary.wireJSON(report)
        #expect(try HouseholdSummary.fromWire(wire) == report)
        #expect(try ServerMessage(SyncFrame(kind: .household, payload: ByteBuffer(bytes: wire))) == .household(report))
    }

    @Test("HOUSEHOLD: oversized arrays and objects are refused naming the member")
    func householdSizes() throws {
        func refused(_ json: String) -> String { replyError(SyncFrame(kind: .household, payload: ByteBuffer(string: json)))?.message ?? "accepted" }
        let chains = (0..<10_001).map { i -> String in
            let hex = String(i, radix: 16)
            return "{\"chain\":\"\(String(repeating: "0", count: 64 - hex.count) + hex)\",\"daily\":[],\"visible\":{}}"
        }.joined(separator: ",")
        #expect(refused("{\"chains\":[\(chains)],\"householdSumOfChains\":{},\"possiblySharedSources\":[]}").hasPrefix("HOUSEHOLD.chains: holds 10001 elements"))
        let types = (0..<10_001).map { "\"t\($0)\":1" }.joined(separator: ",")
        #expect(refused("{\"chains\":[],\"householdSumOfChains\":{\(types)},\"possiblySharedSources\":[]}").hasPrefix("HOUSEHOLD.householdSumOfChains: holds 10001 members"))
        let longType = String(repeating: "t", count: 257)
        #expect(refused("{\"chains\":[],\"householdSumOfChains\":{\"\(longType)\":1},\"possiblySharedSources\":[]}").hasPrefix("HOUSEHOLD.householdSumOfChains: a type longer than 256"))
        // Nesting beyond the parser's depth is refused, not a stack overflow.
        let deep = String(repeating: "[", count: 100_000)
        #expect(refused("{\"chains\":\(deep)}").hasPrefix("HOUSEHOLD: the payload is not JSON"))
    }

    @Test("a kind only a client sends is unexpected_message; junk of every reply kind is malformed_frame")
    func kinds() throws {
        for kind in [SyncFrame.Kind.auth, .enroll, .chainStatusRequest, .bundleBegin, .bundlePart, .bundleEnd, .ping, .householdRequest, .restoreRequest] {
            #expect(replyError(SyncFrame(kind: kind, payload: ByteBuffer()))?.code == .unexpectedMessage, "\(kind.name)")
        }
        var rng = TestRandom(seed: 40)
        for kind in [SyncFrame.Kind.authOK, .chainStatus, .bundleAck, .pong, .household, .error, .restoreBundle] {
            for _ in 0..<200 {
                let junk = (0..<Int.random(in: 1...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let e = replyError(SyncFrame(kind: kind, payload: ByteBuffer(bytes: junk)))
                #expect(e?.code == .malformedFrame && e?.message.hasPrefix(kind.name) == true, "\(kind.name): \(e?.message ?? "accepted")")
            }
        }
    }
}
