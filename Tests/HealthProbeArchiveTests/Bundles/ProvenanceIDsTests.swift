import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeTestSupport

@Suite("A bundle's provenance items")
struct ProvenanceIDsTests {
    /// Every line of observation `obs`'s bundle, its provenance read with `limit` ids a kind.
    func lines(_ node: NodeArchive, _ obs: Int64, limit: Int) throws -> ([[UInt8]], String) {
        try node.archive.writer.read { db in
            var lines: [[UInt8]] = []
            let hash = try ObservationBundleBuilder.build(db, observationID: obs, previousManifestHash: nil, provenanceIDLimit: limit) { _, bytes, _ in
                lines.append(bytes)
            }.2
            return (lines, hash)
        }
    }

    /// A node with a simulated history: six days, then `later` captures of two days each.
    func simulated(later: Int = 0) throws -> (home: TempHome, node: NodeArchive) {
        let t = TempHome()
        try t.simulate(seed: 11, days: [6] + Array(repeating: 2, count: later))
        return (t, try t.open())
    }

    @Test("read by their ids or, past the limit, by a query a kind: the same items in the same order, in every bundle of a simulated history")
    func sameEitherWay() throws {
        let (home, node) = try simulated(later: 3)
        defer { withExtendedLifetime(home) {} }
        // The history must exercise both ways: a kind with several ids in one bundle, and rows
        // of a kind that a bundle does not name (a later observation's versions use fewer).
        let most = try node.archive.writer.read { db in
            try Int.fetchOne(db, sql: """
                SELECT max(n) FROM (SELECT count(DISTINCT source_revision_id) AS n FROM sample_versions GROUP BY created_observation_id
                                    UNION ALL SELECT count(DISTINCT hk_device_id) FROM sample_versions GROUP BY created_observation_id
                                    UNION ALL SELECT count(DISTINCT metadata_id) FROM sample_versions GROUP BY created_observation_id)
                """) ?? 0
        }
        #expect(most >= 3, "the history's bundles each name at most \(most) rows of a kind")
        var provenanceItems = 0
        for obs in Int64(1)...4 {
            let byIDs = try lines(node, obs, limit: ObservationBundleBuilder.provenanceIDLimit)
            for limit in [0, 1, 2] {
                let other = try lines(node, obs, limit: limit)
                #expect(other.1 == byIDs.1, "observation \(obs), limit \(limit): manifest hash differs")
                let same = other.0 == byIDs.0  // not printed whole when they differ
                #expect(same, "observation \(obs), limit \(limit): items differ")
            }
            provenanceItems += byIDs.0.filter { line in
                let text = String(decoding: line, as: UTF8.self)
                return ["source", "source_revision", "device", "metadata"].contains { text.contains("\"kind\":\"\($0)\"") }
            }.count
        }
        #expect(provenanceItems > 4)
        // Versions without a device or metadata are among them (NULL references, passed over).
        let nulls = try node.archive.writer.read { db in
            try Int.fetchOne(db, sql: "SELECT min(count(*) FILTER (WHERE hk_device_id IS NULL), count(*) FILTER (WHERE metadata_id IS NULL)) FROM sample_versions") ?? 0
        }
        #expect(nulls > 0)
    }

    @Test("on a damaged archive (a dangling device, a revision whose source is gone, references that are not integers) both ways still give the same items")
    func sameOnDamage() throws {
        let (home, node) = try simulated()
        defer { withExtendedLifetime(home) {} }
        try node.archive.writer.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            defer { try? db.execute(sql: "PRAGMA foreign_keys = ON") }
            try db.execute(sql: """
                DELETE FROM hk_devices WHERE id = (SELECT min(hk_device_id) FROM sample_versions WHERE created_observation_id = 1);
                UPDATE source_revisions SET source_id = 999999 WHERE id = (SELECT min(source_revision_id) FROM sample_versions WHERE created_observation_id = 1);
                UPDATE sample_versions SET metadata_id = 'x' WHERE id = (SELECT min(id) FROM sample_versions WHERE metadata_id IS NOT NULL AND created_observation_id = 1);
                INSERT INTO hk_devices(id, device_hash) VALUES (1000, lower(hex(randomblob(32))));
                UPDATE sample_versions SET hk_device_id = 1000.5 WHERE id = (SELECT max(id) FROM sample_versions WHERE hk_device_id IS NOT NULL AND created_observation_id = 1);
                """)
        }
        let byIDs = try lines(node, 1, limit: ObservationBundleBuilder.provenanceIDLimit)
        let byQueries = try lines(node, 1, limit: 0)
        #expect(byQueries.1 == byIDs.1)
        let same = byQueries.0 == byIDs.0
        #expect(same, "items differ")
    }

    @Test("the ids gathered are those the observation's versions name, sorted; a kind past the limit is nil; sources follow their revisions")
    func gathered() throws {
        let (home, node) = try simulated()
        defer { withExtendedLifetime(home) {} }
        try node.archive.writer.read { db in
            func distinct(_ column: String) throws -> [Int64] {
                try Int64.fetchAll(db, sql: "SELECT DISTINCT \(column) FROM sample_versions WHERE created_observation_id = 1 AND \(column) IS NOT NULL ORDER BY 1")
            }
            let ids = try ProvenanceIDs(db, versionsAfter: 0, observation: 1, limit: 1 << 16)
            #expect(ids.revisions == (try distinct("source_revision_id")))
            #expect(ids.devices == (try distinct("hk_device_id")))
            #expect(ids.metadata == (try distinct("metadata_id")))
            #expect(ids.sources == (try Int64.fetchAll(db, sql: """
                SELECT DISTINCT sr.source_id FROM sample_versions v JOIN source_revisions sr ON sr.id = v.source_revision_id
                WHERE v.created_observation_id = 1 ORDER BY 1
                """)))
            let limited = try ProvenanceIDs(db, versionsAfter: 0, observation: 1, limit: 1)
            #expect((limited.revisions == nil) == (try distinct("source_revision_id").count > 1))
            #expect((limited.devices == nil) == (try distinct("hk_device_id").count > 1))
            #expect((limited.metadata == nil) == (try distinct("metadata_id").count > 1))
            // Versions of no observation (all are at or below the rowid given): nothing.
            let none = try ProvenanceIDs(db, versionsAfter: Int64.max, observation: 1, limit: 1)
            #expect(none.revisions == [] && none.sources == [] && none.devices == [] && none.metadata == [])
        }
    }
}
