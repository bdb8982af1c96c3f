import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeSimulator
import HealthProbeTestSupport

@Suite("Archive integrity")
struct IntegrityTests {
    /// A home with a short simulated history and one completed export.
    func home() throws -> (TempHome, String) {
        let t = TempHome()
        try t.simulate(seed: 4, days: [5, 2], types: Array(SimulatedType.all.prefix(4)))
        let node = try t.open()
        let path = t.root + "/export.json"
        _ = try Exporter.run(node: node, request: ExportRequest(kind: .observationRecordsJSON), out: path)
        return (t, path)
    }

    func problems(_ t: TempHome, _ mode: ArchiveVerifier.Mode = .full) throws -> [String: String] {
        let report = try ArchiveVerifier.run(try t.open(), mode: mode)
        return Dictionary(uniqueKeysWithValues: report.checks.filter { $0.status == .problem }.map { ($0.name, $0.detail) })
    }

    func damage(_ t: TempHome, _ sql: String) throws {
        let node = try t.open()
        try node.archive.writer.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            try db.execute(sql: sql)
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
    }

    @Test("a healthy archive passes quick and full")
    func healthy() throws {
        let (t, _) = try home()
        #expect(try problems(t, .quick).isEmpty)
        #expect(try problems(t, .full).isEmpty)
    }

    @Test("full verify builds every sent bundle again; a bundle that no longer builds to what was sent is named")
    func sentBundles() throws {
        let (t, _) = try home()
        do {
            let node = try t.open()
            // What the sync client records for each acknowledged bundle.
            try node.archive.writer.write { db in
                var previous: String?
                for (i, obs) in try Int64.fetchAll(db, sql: "SELECT id FROM observations ORDER BY id").enumerated() {
                    let hash = try ObservationBundleBuilder.build(db, observationID: obs, previousManifestHash: previous) { _, _, _ in }.2
                    try db.execute(sql: """
                        INSERT INTO bundle_log(device_chain_id, sequence, observation_id, manifest_hash, previous_manifest_hash, item_count, direction, recorded_at, acknowledged_at)
                        VALUES (?, ?, ?, ?, ?, 0, 'sent', 0, 0)
                        """, arguments: [node.deviceChainID, i + 1, obs, hash, previous])
                    previous = hash
                }
            }
            let report = try ArchiveVerifier.run(node, mode: .full)
            #expect(report.checks.first { $0.name == "sent_bundles" }?.detail == "2 sent bundles build to the manifest hashes they were sent with")
            #expect(try ArchiveVerifier.run(node, mode: .quick).checks.first { $0.name == "sent_bundles" }?.status == .skipped)
        }
        // A type renamed under the bundles (what a later capture used to do): both bundles name the type.
        try damage(t, "UPDATE sample_types SET display_name = 'Renamed'")
        let found = try problems(t)["sent_bundles"] ?? ""
        #expect(found.contains("bundle 1 (observation 1) builds to") && found.contains("bundle 2"), "\(found)")
    }

    @Test("each kind of damage is caught and named")
    func damaged() throws {
        let cases: [(String, String, String)] = [
            ("schema_version", "UPDATE archive_metadata SET value = '3' WHERE key = 'schema_version'", "schema_version is 3"),
            ("foreign_keys", "INSERT INTO sample_observation_events(observation_id, sample_id, event_kind, observed_at) VALUES (1, 999999, 0, 0)", "sample_observation_events"),
            ("ranges_from_events", "DELETE FROM sample_visibility_ranges WHERE rowid = (SELECT min(rowid) FROM sample_visibility_ranges)", "derived from the events but not stored"),
            ("ranges_from_events", "UPDATE sample_visibility_ranges SET last_observation_id = 2 WHERE rowid = (SELECT max(rowid) FROM sample_visibility_ranges WHERE last_observation_id IS NULL AND first_observation_id = 1)", "stored but not derived"),
            ("open_ranges", "INSERT INTO sample_visibility_ranges(sample_id, version_id, first_observation_id, first_seen_at) SELECT sample_id, version_id, 2, 0 FROM sample_visibility_ranges WHERE last_observation_id IS NULL AND first_observation_id = 1 LIMIT 1", "open ranges"),
            ("duplicate_identities", "INSERT INTO samples(sample_type_id, sample_uuid_hash, strict_fingerprint, first_seen_observation_id, first_seen_at) SELECT sample_type_id, sample_uuid_hash, randomblob(32), 1, 0 FROM samples WHERE sample_uuid_hash IS NOT NULL LIMIT 1", "sample rows"),
            ("aggregates", "UPDATE observation_type_summaries SET visible_record_count = visible_record_count + 1 WHERE observation_id = 2", "visible_record_count"),
            ("visible_counts", "UPDATE observation_type_runs SET verified_visible_count = verified_visible_count + 1 WHERE id = (SELECT max(id) FROM observation_type_runs WHERE verified_visible_count IS NOT NULL)", "the run verified"),
            ("aggregates", "UPDATE observation_type_summaries SET aggregate_hash = (CASE WHEN substr(aggregate_hash, 1, 1) = '0' THEN '1' ELSE '0' END) || substr(aggregate_hash, 2) WHERE observation_id = 2", "does not match the summary"),
            ("daily_aggregates", "UPDATE daily_type_aggregates SET visible_record_count = visible_record_count + 1 WHERE rowid = (SELECT max(rowid) FROM daily_type_aggregates)", "is stored but not derived from the ranges"),
            ("daily_aggregates", "UPDATE daily_type_aggregates SET aggregate_hash = (CASE WHEN substr(aggregate_hash, 1, 1) = '0' THEN '1' ELSE '0' END) || substr(aggregate_hash, 2) WHERE rowid = (SELECT max(rowid) FROM daily_type_aggregates)", "does not match its content"),
            ("daily_aggregates", "DELETE FROM daily_type_aggregates WHERE rowid = (SELECT max(rowid) FROM daily_type_aggregates)", "is derived from the ranges but not stored"),
            ("row_bounds", "UPDATE observations SET samples_before = (SELECT max(id) FROM samples) WHERE id = 2", "is at or below observation 2's samples_before"),
            ("row_bounds", "UPDATE observations SET versions_before = versions_before + 1 WHERE id = 1", "is at or below observation 1's versions_before"),
            ("export_manifests", "UPDATE export_manifests SET manifest_hash = (CASE WHEN substr(manifest_hash, 1, 1) = '0' THEN '1' ELSE '0' END) || substr(manifest_hash, 2)", "differs from recorded"),
        ]
        let (original, _) = try home()
        for (check, sql, expected) in cases {
            let t = try original.copy()
            try damage(t, sql)
            let found = try problems(t)
            #expect(found[check]?.contains(expected) == true, "\(check) after `\(sql.prefix(60))`: \(found)")
        }
    }

    @Test("a corrupted page is caught by the integrity check (or the archive refuses to open)")
    func corruptPage() throws {
        let (t, _) = try home()
        do {
            let node = try t.open()
            try node.archive.writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        }
        // Overwrite the header and cell pointers of the root page of `sample_versions`.
        let (root, pageSize) = try rawQueue(t.home.archivePath).read { db in
            (try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = 'sample_versions'")!,
             try Int.fetchOne(db, sql: "PRAGMA page_size")!)
        }
        let h = try #require(FileHandle(forUpdatingAtPath: t.home.archivePath))
        try h.seek(toOffset: UInt64((root - 1) * pageSize))
        try h.write(contentsOf: Data(repeating: 0xA5, count: 64))
        try h.close()
        do {
            let found = try problems(t)
            #expect(found["sqlite_integrity_check"] != nil || found.count > 0, "\(found)")
        } catch {
            // Opening or reading a malformed database fails with an error: also caught.
            #expect("\(error)".contains("malformed") || "\(error)".contains("corrupt") || "\(error)".contains("not"), "\(error)")
        }
    }

    @Test("daily rows bucketed in the wrong days, or shared across a time-zone change, are caught")
    func dailyRowsPerLocalDay() throws {
        let export = try oneLocalDayExport()
        let t = TempHome()
        _ = try importExport(t, export.path)
        _ = try importExport(t, export.path)  // shares the first import's daily rows
        #expect(try problems(t, .quick).isEmpty)
        #expect(try problems(t, .full).isEmpty)

        // The rows of observation 1 recomputed in UTC days (hashed, so only the bucketing is wrong).
        try t.open().archive.writer.write { db in
            let type = try Int64.fetchOne(db, sql: "SELECT sample_type_id FROM daily_type_aggregates LIMIT 1")!
            try db.execute(sql: "DELETE FROM daily_type_aggregates WHERE observation_id = 1")
            let utc = LocalDays(identifier: "UTC", secondsFromGMT: 0)
            try Aggregates.writeDaily(db, obs: 1, typeID: type, typeIdentifier: "HKQuantityTypeIdentifierStepCount", days: utc, from: 1_717_100_000, to: 1_717_400_000)
        }
        for mode in [ArchiveVerifier.Mode.quick, .full] {
            let found = try problems(t, mode)
            #expect(found["daily_aggregates"]?.contains("observation 1 HKQuantityTypeIdentifierStepCount: the daily row of the local day from 2024-05-31T00:00:00.000Z") == true, "\(found)")
            #expect(found["aggregates"] == nil, "\(found)")
        }

        // A fresh home: observation 2 shares observation 1's rows but claims another time zone.
        let t2 = TempHome()
        _ = try importExport(t2, export.path)
        _ = try importExport(t2, export.path)
        try damage(t2, "UPDATE observations SET time_zone_seconds_from_gmt = 0 WHERE id = 2")
        let found = try problems(t2, .quick)
        #expect(found["daily_aggregates"]?.contains("observation 2 HKQuantityTypeIdentifierStepCount: shares the daily rows of observation 1, recorded in another time zone") == true, "\(found)")
    }
}
