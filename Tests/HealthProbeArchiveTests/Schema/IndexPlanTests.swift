import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive

/// Every index of the latest schema is justified by a query of the code whose
/// plan uses it (issue 23: an index no plan uses only costs bytes and writes).
/// An index added without a query here fails `everyIndexIsJustified`; a query
/// whose plan stops using its index fails `plansUseTheirIndexes`. The queries
/// are the code's own, shortened to the part that chooses the index; each names
/// where it lives.
@Suite("Index plans")
struct IndexPlanTests {
    struct Use: Sendable {
        let index: String
        let site: String
        let sql: String
        let arguments: StatementArguments
        init(_ index: String, _ site: String, _ sql: String, _ arguments: StatementArguments = []) {
            (self.index, self.site, self.sql, self.arguments) = (index, site, sql, arguments)
        }
    }

    static let hash = Data(repeating: 7, count: 32)

    /// The query that justifies each index; constraint indexes (UNIQUE, PRIMARY KEY) where a lookup relies on them.
    static let uses: [Use] = [
        // Created indexes: each must be here.
        Use("idx_events_sample", "ObservationChecks (ranges rebuilt from the touched samples' events)", ObservationChecks.touchedEvents),
        Use("idx_hk_devices_hash", "PageOperations (a device's id by its hash)",
            "SELECT id FROM hk_devices WHERE device_hash = ?", ["x"]),
        Use("idx_observations_device_time", "BundleItems (an observation's sequence in its chain)",
            "SELECT count(*) FROM observations WHERE device_chain_id = ? AND id <= ?", [1, 1]),
        Use("idx_relationship_target", "AppleHealthImporter (a relationship already recorded)",
            "SELECT 1 FROM sample_relationships x WHERE x.source_sample_id = ? AND x.target_sample_id = ? AND x.relationship_kind = ?", [1, 2, "k"]),
        Use("idx_sample_versions_time", "ObservationDiff (an edit's partner at the same start and end)",
            "SELECT 1 FROM sample_versions v2 JOIN samples s2 ON s2.id = v2.sample_id AND s2.sample_type_id = ? WHERE v2.start_date = ? AND v2.end_date = ?", [1, 0.0, 1.0]),
        Use("idx_sample_versions_time", "Aggregates (a day's versions recounted)",
            """
            SELECT count(*) FROM sample_versions v CROSS JOIN samples s ON s.id = v.sample_id
            CROSS JOIN sample_visibility_ranges r ON r.sample_id = v.sample_id AND r.version_id = v.id
            WHERE v.start_date >= ? AND v.start_date < ? AND s.sample_type_id = ? AND r.first_observation_id <= ?
            """, [0.0, 86400.0, 1, 1]),
        Use("idx_samples_type_semantic", "AppleHealthImporter (edit matching by semantic fingerprint)",
            """
            SELECT count(*) FROM samples s INDEXED BY idx_samples_type_semantic CROSS JOIN sample_observation_events e
              ON e.observation_id = ?1 AND e.sample_id = s.id AND e.event_kind = \(EventKind.appeared.sql)
            WHERE s.sample_type_id = ?2 AND substr(s.semantic_fingerprint, 1, 8) = substr(?3, 1, 8) AND s.semantic_fingerprint = ?3
            """, [1, 1, hash]),
        Use("idx_samples_uuid_hash", "PageOperations (the capture's lookup by UUID, INDEXED BY)",
            "SELECT s.id FROM samples s INDEXED BY idx_samples_uuid_hash WHERE s.sample_uuid_hash = ? AND s.sample_type_id = ?", [hash, 1]),
        Use("idx_samples_uuid_hash", "ObservationChecks (a UUID names one sample of its type, a lookup per added sample)",
            ObservationChecks.duplicateUUIDsByLookup, [0]),
        Use("idx_samples_uuid_hash", "ObservationChecks (the same, one walk of the index for a large bundle)",
            ObservationChecks.duplicateUUIDsByWalk, [0]),
        Use("idx_source_revisions_identity", "PageOperations, BundleApplier (a revision's id)",
            "SELECT id FROM source_revisions WHERE source_id = ? AND ifnull(product_type, '') = ifnull(?, '') AND ifnull(version, '') = ifnull(?, '') AND ifnull(operating_system_version, '') = ifnull(?, '')",
            [1, "a", "b", "c"]),
        Use("idx_sources_identity", "PageOperations, BundleApplier (a source's id)",
            "SELECT id FROM sources WHERE ifnull(source_name_hash, '') = ifnull(?, '') AND ifnull(bundle_identifier, '') = ifnull(?, '')", ["a", "b"]),
        Use("idx_type_runs_type_observation", "Aggregates, SimulatorCapture (a type's previous run)",
            "SELECT t.id FROM observation_type_runs t WHERE t.sample_type_id = ? AND t.observation_id < ? ORDER BY t.observation_id DESC LIMIT 1", [1, 5]),
        Use("idx_visibility_open_ranges", "BundleItems (ranges an observation closed)",
            "SELECT g.sample_id FROM sample_visibility_ranges g WHERE g.last_observation_id = ? ORDER BY g.rowid", [1]),
        Use("idx_visibility_open_ranges", "ObservationChecks (ranges of a type closed since a summary, INDEXED BY)",
            "SELECT count(*) FROM sample_visibility_ranges r INDEXED BY idx_visibility_open_ranges WHERE r.last_observation_id > ? AND r.last_observation_id <= ?", [1, 2]),
        Use("idx_visibility_point_lookup", "BundleItems (ranges an observation opened)",
            "SELECT g.sample_id FROM sample_visibility_ranges g WHERE g.first_observation_id = ? ORDER BY g.rowid", [1]),
        // Constraint indexes the lookups rely on.
        Use("sqlite_autoindex_sample_observation_events_1", "ObservationQueries (an observation's events of one kind)",
            "SELECT count(*) FROM sample_observation_events e WHERE e.observation_id = ? AND e.event_kind = \(EventKind.disappeared.sql)", [1]),
        Use("sqlite_autoindex_sample_observation_events_1", "Aggregates (a type's samples probed for the observation's events)",
            """
            SELECT count(*) FROM samples s INDEXED BY \(SampleIndexes.byTypeAndFingerprint) CROSS JOIN sample_observation_events e
              ON e.sample_id = s.id AND e.observation_id = ? AND e.event_kind IN \(EventKind.rangeKindsSQL)
            WHERE s.sample_type_id = ?
            """, [1, 1]),
        Use("sqlite_autoindex_sample_observation_events_1", "BundleItems (an observation's events in row order)",
            "SELECT e.id FROM sample_observation_events e WHERE e.observation_id = ? ORDER BY e.id", [1]),
        Use("idx_sample_versions_payload", "PageOperations, BundleApplier (a sample's version by its payload hash)",
            SampleIndexes.versionByPayload, [1, hash]),
        Use("idx_samples_type_fingerprint", "PageOperations, BundleApplier (a sample by its strict fingerprint)",
            "SELECT id FROM samples WHERE sample_type_id = ?1 AND \(SampleIndexes.fingerprintMatches("strict_fingerprint", "?2"))", [1, hash]),
        Use("idx_samples_type_fingerprint", "AppleHealthImporter, HouseholdSummary (samples joined by strict fingerprint)", fingerprintJoin),
        Use("idx_samples_type_fingerprint", "PointInTime (a type's visible samples in fingerprint order from a cursor)",
            PointInTime.selectSQL, [1, 1, Data([0]), Data(repeating: 0xFF, count: 33), nil, nil]),
        Use("sqlite_autoindex_sample_visibility_ranges_1", "RecordItems (a sample's range visible at an observation)",
            "SELECT r.version_id FROM sample_visibility_ranges r WHERE r.sample_id = ? AND r.first_observation_id <= ? AND (r.last_observation_id IS NULL OR r.last_observation_id > ?)", [1, 2, 2]),
        Use("sqlite_autoindex_sample_visibility_ranges_1", "ObservationChecks (the touched samples' stored ranges)", ObservationChecks.touchedRanges),
    ]

    /// The shape of the importer's relationship joins and the household's shared-fingerprint join.
    static let fingerprintJoin = """
        SELECT count(*) FROM sample_types t CROSS JOIN samples c ON c.sample_type_id = t.id
          AND \(SampleIndexes.fingerprintMatches("c.strict_fingerprint", "(SELECT strict_fingerprint FROM samples WHERE id = t.id)"))
        """

    static func plan(_ db: Database, _ use: Use) throws -> String {
        try db.ensureTempTable(TempTable.touchedSamples)
        return try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + use.sql, arguments: use.arguments).map { $0["detail"] as String }.joined(separator: "; ")
    }

    @Test("every index the schema creates is justified by a query here, and every index named here exists")
    func everyIndexIsJustified() throws {
        let archive = try Archive.inMemory()
        let (created, all) = try archive.writer.read { db in
            (Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")),
             Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index'")))
        }
        let named = Set(Self.uses.map(\.index))
        #expect(created.subtracting(named).isEmpty, "indexes no query here uses: \(created.subtracting(named).sorted())")
        #expect(named.subtracting(all).isEmpty, "indexes named here the schema lacks: \(named.subtracting(all).sorted())")
        #expect(created.count >= 12)
    }

    @Test("each query's plan uses its index", arguments: Self.uses.indices)
    func plansUseTheirIndexes(_ i: Int) throws {
        let use = Self.uses[i]
        let archive = try Archive.inMemory()
        let plan = try archive.writer.write { try Self.plan($0, use) }
        #expect(plan.range(of: "\\b\(use.index)\\b", options: .regularExpression) != nil, "\(use.site): \(plan)")
    }

    @Test("an observation's new samples and versions are read as a rowid range above its bounds, in rowid order (schema 12)")
    func observationRowsByRowidRange() throws {
        let archive = try Archive.inMemory()
        try archive.writer.write { db in
            for (sql, arguments) in [("SELECT s.id FROM samples s WHERE s.id > ? AND s.first_seen_observation_id = ? ORDER BY s.id", [1, 1]),
                                     ("SELECT v.id FROM sample_versions v WHERE v.id > ? AND v.created_observation_id = ? ORDER BY v.id", [1, 1]),
                                     ("DELETE FROM samples WHERE id > (SELECT ifnull(samples_before, 0) FROM observations WHERE id = ?1) AND first_seen_observation_id = ?1", [1])] as [(String, StatementArguments)] {
                let plan = try Self.plan(db, Use("", "", sql, arguments))
                #expect(plan.contains("USING INTEGER PRIMARY KEY (rowid>?)") && !plan.contains("TEMP B-TREE"), "\(plan)")
            }
            let dropped = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE name IN ('idx_samples_first_seen', 'idx_sample_versions_created')")
            #expect(dropped.isEmpty)
        }
    }

    @Test("a version is looked up by its sample and its payload hash's prefix, both in the index (schema 13)")
    func versionLookupUsesThePrefix() throws {
        let archive = try Archive.inMemory()
        let plan = try archive.writer.write { try Self.plan($0, Use("", "", SampleIndexes.versionByPayload, [1, Self.hash])) }
        #expect(plan.contains("USING INDEX idx_sample_versions_payload (sample_id=? AND <expr>=?)"), "\(plan)")
    }

    @Test("lookups and joins by strict fingerprint seek its prefix; point-in-time pages read them in index order and sort nothing (schema 14)")
    func fingerprintPrefixPlans() throws {
        let archive = try Archive.inMemory()
        try archive.writer.write { db in
            for use in Self.uses where use.index == SampleIndexes.byTypeAndFingerprint && !use.sql.contains("INDEXED BY") {
                let plan = try Self.plan(db, use)
                #expect(plan.contains("USING INDEX idx_samples_type_fingerprint (sample_type_id=? AND <expr>") || plan.contains("USING COVERING INDEX idx_samples_type_fingerprint (sample_type_id=? AND <expr>"), "\(use.site): \(plan)")
                #expect(!plan.contains("TEMP B-TREE"), "\(use.site): \(plan)")
            }
        }
    }

    @Test("the event lookups schema 10 changed are searches, never scans of the table")
    func eventLookupsSearch() throws {
        let archive = try Archive.inMemory()
        try archive.writer.write { db in
            for use in Self.uses where use.index.contains("sample_observation_events") || use.index == "idx_events_sample" {
                let plan = try Self.plan(db, use)
                #expect(!plan.contains("SCAN e") && !plan.contains("SCAN sample_observation_events"), "\(use.site): \(plan)")
            }
        }
    }

    @Test("the checks of a large bundle and the verifier's range rebuild sort nothing: the walks come in sample order, the UUID walk groups in index order")
    func largeBundleChecksSortNothing() throws {
        let archive = try Archive.inMemory()
        try archive.writer.write { db in
            for sql in [ObservationChecks.touchedEvents, ObservationChecks.touchedRanges, ObservationChecks.duplicateUUIDsByWalk,
                        RangeRebuild.allEvents, RangeRebuild.allRanges] {
                let plan = try Self.plan(db, Use("", "", sql, sql.contains("?") ? [0] : []))
                #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
            }
        }
    }
}
