import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeSimulator

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

    @Test("each kind of damage is caught and named")
    func damaged() throws {
        let cases: [(String, String, String)] = [
            ("schema_version", "UPDATE archive_metadata SET value = '3' WHERE key = 'schema_version'", "schema_version is 3"),
            ("foreign_keys", "INSERT INTO sample_observation_events(observation_id, sample_id, event_kind, observed_at) VALUES (1, 999999, 'appeared', 0)", "sample_observation_events"),
            ("ranges_from_events", "DELETE FROM sample_visibility_ranges WHERE rowid = (SELECT min(rowid) FROM sample_visibility_ranges)", "derived from events but not stored"),
            ("ranges_from_events", "UPDATE sample_visibility_ranges SET last_observation_id = 2 WHERE rowid = (SELECT max(rowid) FROM sample_visibility_ranges WHERE last_observation_id IS NULL AND first_observation_id = 1)", "stored but not derived"),
            ("open_ranges", "INSERT INTO sample_visibility_ranges(sample_id, version_id, first_observation_id, first_seen_at) SELECT sample_id, version_id, 2, 0 FROM sample_visibility_ranges WHERE last_observation_id IS NULL AND first_observation_id = 1 LIMIT 1", "open ranges"),
            ("duplicate_identities", "INSERT INTO samples(sample_type_id, sample_uuid_hash, strict_fingerprint, first_seen_observation_id, first_seen_at) SELECT sample_type_id, sample_uuid_hash, 'x' || strict_fingerprint, 1, 0 FROM samples WHERE sample_uuid_hash IS NOT NULL LIMIT 1", "sample rows"),
            ("aggregates", "UPDATE observation_type_summaries SET visible_record_count = visible_record_count + 1 WHERE observation_id = 2", "visible_record_count"),
            ("export_manifests", "UPDATE export_manifests SET manifest_hash = (CASE WHEN substr(manifest_hash, 1, 1) = '0' THEN '1' ELSE '0' END) || substr(manifest_hash, 2)", "differs from recorded"),
        ]
        for (check, sql, expected) in cases {
            let (t, _) = try home()
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
}
