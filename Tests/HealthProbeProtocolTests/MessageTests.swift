import Foundation
import NIOCore
import Testing
import HealthProbeCanonical
@testable import HealthProbeProtocol
import HealthProbeTestSupport

/// `Protocol/vectors/messages.json`: frame payloads the server decodes, valid or refused.
struct MessageVectors: Decodable {
    struct Case: Decodable, CustomStringConvertible {
        var frame: String
        var payload: String
        var error: String?
        var field: String?
        var note: String?
        var description: String { "\(frame) \(note ?? "")" }
    }
    var cases: [Case]

    static func load() throws -> MessageVectors {
        try JSONDecoder().decode(MessageVectors.self, from: Data(contentsOf: vectorURL("messages.json")))
    }
}

@Suite("Typed frame payloads (Protocol/vectors/messages.json)")
struct MessageTests {
    /// Decodes `payload` as the message type of `frame`.
    static func decode(_ frame: String, _ payload: [UInt8]) throws {
        let bytes = ByteBuffer(bytes: payload)
        switch frame {
        case "AUTH": _ = try AuthRequest(SyncFrame(kind: .auth, payload: bytes))
        case "ENROLL": _ = try EnrollRequest(SyncFrame(kind: .enroll, payload: bytes))
        case "CHAIN_STATUS_REQUEST": _ = try ChainStatusRequest(SyncFrame(kind: .chainStatusRequest, payload: bytes))
        case "HOUSEHOLD_REQUEST": _ = try HouseholdRequest(SyncFrame(kind: .householdRequest, payload: bytes))
        case "BUNDLE_BEGIN": _ = try BundleBegin(SyncFrame(kind: .bundleBegin, payload: bytes))
        case "BUNDLE_END": _ = try BundleEnd(SyncFrame(kind: .bundleEnd, payload: bytes))
        case "BUNDLE_STREAM_BEGIN": _ = try BundleStreamBegin(SyncFrame(kind: .bundleStreamBegin, payload: bytes))
        case "BUNDLE_STREAM_END": _ = try BundleBegin(SyncFrame(kind: .bundleStreamEnd, payload: bytes))
        case "RESTORE_REQUEST": _ = try RestoreRequest(SyncFrame(kind: .restoreRequest, payload: bytes))
        default: Issue.record("unknown frame \(frame) in the vectors")
        }
    }

    @Test("every vector decodes, or is refused as malformed_frame naming its member", arguments: try MessageVectors.load().cases)
    func vector(_ c: MessageVectors.Case) {
        do {
            try Self.decode(c.frame, Array(c.payload.utf8))
            #expect(c.error == nil, "\(c) was accepted")
        } catch let e as SyncProtocolError {
            #expect(c.error == e.code.rawValue, "\(c): \(e.code.rawValue) \(e.message)")
            if let field = c.field { #expect(e.message.contains(field), "\(c): \(e.message)") }
        } catch {
            Issue.record("\(c): not a protocol error: \(error)")
        }
    }

    @Test("the vectors hold both outcomes for every frame the server reads")
    func coverage() throws {
        let cases = try MessageVectors.load().cases
        for frame in ["AUTH", "ENROLL", "CHAIN_STATUS_REQUEST", "HOUSEHOLD_REQUEST", "BUNDLE_BEGIN", "BUNDLE_END", "BUNDLE_STREAM_BEGIN", "BUNDLE_STREAM_END", "RESTORE_REQUEST"] {
            #expect(cases.contains { $0.frame == frame && $0.error == nil }, "\(frame) has no valid vector")
        }
        #expect(cases.filter { $0.error != nil }.count >= 20)
    }

    @Test("a number is decoded only when it is an exact integer in range: every double near the edges, no trap")
    func numbersNearTheEdges() throws {
        let edges: [Double] = [0, 1, -1, 0.5, 1.5, 9_007_199_254_740_991, 9_007_199_254_740_992, 9.223372036854775808e18, 1.8446744073709552e19,
                               1e300, -1e300, .greatestFiniteMagnitude, .leastNonzeroMagnitude, 1_000_000, 1_000_001]
        for d in edges {
            let payload = try CanonicalJSON.encode(.object(["manifest_hash": .string(String(repeating: "a", count: 64)), "sequence": .number(d)]))
            let accepted = (try? BundleEnd(SyncFrame(kind: .bundleEnd, payload: ByteBuffer(bytes: payload)))) != nil
            #expect(accepted == (d >= 1 && d <= 9_007_199_254_740_991 && d == d.rounded()), "sequence \(d)")
        }
    }
}
