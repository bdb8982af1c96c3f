import Foundation
import Testing
import HealthProbeTestSupport
@testable import HealthProbeArchive

@Suite("Bundle log records")
struct BundleLogRecordTests {
    @Test("a sent bundle is logged once; sent again only its acknowledgement moves; the log's named requests read it back")
    func sentLog() async throws {
        let t = TempHome()
        let node = try t.open()
        let first = try capture(node, samples: [hr(1), hr(2)]).obs
        let second = try capture(node, samples: [hr(1), hr(2), hr(3)]).obs
        let h1 = String(repeating: "a", count: 64), h2 = String(repeating: "b", count: 64)
        try await node.archive.recordSent(chain: node.deviceChainID, sequence: 1, observation: first, manifestHash: h1, previous: nil, items: 3, now: 100)
        try await node.archive.recordSent(chain: node.deviceChainID, sequence: 2, observation: second, manifestHash: h2, previous: h1, items: 4, now: 200)
        try await node.archive.recordSent(chain: node.deviceChainID, sequence: 1, observation: first, manifestHash: h1, previous: nil, items: 3, now: 300)
        #expect(try await node.archive.sentManifestHashes(chain: node.deviceChainID, upTo: 2) == [1: h1, 2: h2])
        #expect(try await node.archive.sentManifestHashes(chain: node.deviceChainID, upTo: 1) == [1: h1])
        let rows = try await node.archive.writer.read { db in try BundleLogRecord.order(BundleLogRecord.Columns.sequence).fetchAll(db) }
        #expect(rows.count == 2)
        #expect(rows.map(\.direction) == [BundleLogRecord.sent, BundleLogRecord.sent])
        #expect(rows.first?.recordedAt == 100 && rows.first?.acknowledgedAt == 300, "a second acknowledgement moves only acknowledged_at")
        // A node's log has nothing received.
        #expect(try await node.archive.receivedBundleLog().isEmpty)
        let r = try await node.archive.receivedBundles()
        #expect(r.count == 0 && r.lastManifestHash == nil && r.lastRecordedAt == nil)
        #expect(try node.archive.isBundleReceived(sequence: 1) == false)
        #expect(try node.archive.chainStateAfterReceived(sequence: 1) == nil)
    }

    @Test("metadata values are stored, replaced and read back by key")
    func metadata() throws {
        let t = TempHome()
        let node = try t.open()
        #expect(try node.archive.metadata("test.key") == nil)
        try node.archive.setMetadata(["test.key": "1", "test.other": "x"])
        try node.archive.setMetadata(["test.key": "2"])
        #expect(try node.archive.metadata("test.key") == "2")
        #expect(try node.archive.metadata("test.other") == "x")
    }
}
