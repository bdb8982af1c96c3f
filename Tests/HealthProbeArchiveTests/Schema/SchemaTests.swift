import Foundation
import GRDB
import GRDBSQLite
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("Schema and migrations")
struct SchemaTests {
    static let tables = ["schema_migrations", "archive_metadata", "device_chains", "observations", "sample_types",
                         "observation_type_runs", "sources", "source_revisions", "hk_devices", "metadata_blobs", "samples",
                         "sample_versions", "sample_observation_events", "sample_visibility_ranges", "sample_relationships",
                         "observation_type_summaries", "daily_type_aggregates", "export_manifests", "export_items", "capture_pages", "bundle_log"]
    static let indexes = ["idx_observations_device_time", "idx_type_runs_type_observation", "idx_samples_type_fingerprint", "idx_samples_uuid_hash",
                          "idx_samples_type_semantic", "idx_sample_versions_payload", "idx_sample_versions_time",
                          "idx_events_sample", "idx_visibility_open_ranges",
                          "idx_visibility_point_lookup", "idx_relationship_target"]

    func checkSchema(_ archive: Archive) throws {
        try archive.writer.read { db throws in
            let tables = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
            for t in Self.tables { #expect(tables.contains(t), "table \(t)") }
            let indexes = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index'"))
            for i in Self.indexes { #expect(indexes.contains(i), "index \(i)") }
            // Dropped by migration 8: UNIQUE(sample_id, payload_hash) covered it (since 13, idx_sample_versions_payload).
            #expect(!indexes.contains("idx_sample_versions_sample"))
            // Dropped by migration 10: the events' UNIQUE(observation_id, event_kind, sample_id) covers the first;
            // no query's plan used the other two (IndexPlanTests).
            for i in ["idx_events_observation_kind", "idx_relationship_source", "idx_daily_type_bucket"] { #expect(!indexes.contains(i), "index \(i)") }
            #expect(try Int.fetchOne(db, sql: "PRAGMA foreign_keys") == 1)
            #expect(try Int.fetchAll(db, sql: "SELECT version FROM schema_migrations ORDER BY version") == Array(2...ArchiveMigrations.latestVersion))
            #expect(try String.fetchOne(db, sql: "SELECT value FROM archive_metadata WHERE key = 'schema_version'") == String(ArchiveMigrations.latestVersion))
            #expect(try String.fetchOne(db, sql: "SELECT value FROM archive_metadata WHERE key = 'archive_format'") == ArchiveMigrations.archiveFormat)
            #expect(try String.fetchOne(db, sql: "SELECT value FROM archive_metadata WHERE key = 'created_at'") != nil)
        }
    }

    @Test("on disk: every table and index of section 5, WAL, foreign keys, migrations recorded")
    func onDisk() throws {
        let t = TempHome()
        let node = try t.open()
        try checkSchema(node.archive)
        try node.archive.writer.read { db throws in
            #expect(try String.fetchOne(db, sql: "PRAGMA journal_mode") == "wal")
        }
    }

    @Test("SQLite's memory statistics are off (no process-wide mutex on every allocation)")
    func memoryStatisticsOff() throws {
        let t = TempHome()
        let node = try t.open()
        try node.archive.writer.write { db in try db.execute(sql: "CREATE TEMP TABLE m(x); INSERT INTO m VALUES (randomblob(100000))") }
        #expect(SQLiteSetup.result == 0, "SQLite was initialized before the settings could apply")
        #expect(sqlite3_memory_used() == 0, "SQLite still counts its memory")
    }

    @Test("in memory: the same schema, and foreign keys are enforced")
    func inMemory() throws {
        let archive = try Archive.inMemory()
        try checkSchema(archive)
        #expect(throws: DatabaseError.self) {
            try archive.writer.write { db in
                try db.execute(sql: "INSERT INTO observations(device_chain_id, observed_at, status, trigger_reason, schema_version) VALUES (42, 0, 'running', 'x', 2)")
            }
        }
    }

    /// A chain, an observation (1), a type (1, `T`) and a sample (1) of it.
    static func seed(_ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO device_chains(id, device_chain_hash, created_at) VALUES (1, 'c', 0);
            INSERT INTO observations(id, device_chain_id, observed_at, status, trigger_reason, schema_version) VALUES (1, 1, 0, 'running', 't', 2);
            INSERT INTO sample_types(id, type_identifier) VALUES (1, 'T');
            INSERT INTO samples(id, sample_type_id, strict_fingerprint, first_seen_observation_id, first_seen_at) VALUES (1, 1, zeroblob(32), 1, 0);
            """)
    }

    @Test("sample identity and event uniqueness are enforced by the schema")
    func uniqueness() throws {
        let archive = try Archive.inMemory()
        try archive.writer.write { db in
            try Self.seed(db)
            try db.execute(sql: "INSERT INTO sample_observation_events(observation_id, sample_id, event_kind, observed_at) VALUES (1, 1, 0, 0)")
        }
        #expect(throws: DatabaseError.self) {
            try archive.writer.write { db in try db.execute(sql: "INSERT INTO samples(sample_type_id, strict_fingerprint, first_seen_observation_id, first_seen_at) VALUES (1, zeroblob(32), 1, 0)") }
        }
        // Schema 14: a fingerprint sharing another's first 16 bytes is refused in its type, not in another.
        let sharesPrefix = Data(count: 16) + Data([1]) + Data(count: 15), differsAt16 = Data(count: 15) + Data([1]) + Data(count: 16)
        let insertSample = "INSERT INTO samples(sample_type_id, strict_fingerprint, first_seen_observation_id, first_seen_at) VALUES (?, ?, 1, 0)"
        #expect(throws: DatabaseError.self) {
            try archive.writer.write { db in try db.execute(sql: insertSample, arguments: [1, sharesPrefix]) }
        }
        try archive.writer.write { db in
            try db.execute(sql: insertSample, arguments: [1, differsAt16])
            try db.execute(sql: "INSERT INTO sample_types(id, type_identifier) VALUES (2, 'U')")
            try db.execute(sql: insertSample, arguments: [2, Data(count: 32)])
            let match = "SELECT id FROM samples WHERE sample_type_id = ?1 AND \(SampleIndexes.fingerprintMatches("strict_fingerprint", "?2"))"
            #expect(try Int64.fetchOne(db, sql: match, arguments: [1, Data(count: 32)]) == 1)
            #expect(try Int64.fetchOne(db, sql: match, arguments: [1, sharesPrefix]) == nil, "a shared prefix is not the sample")
        }
        #expect(throws: DatabaseError.self) {
            try archive.writer.write { db in try db.execute(sql: "INSERT INTO sample_observation_events(observation_id, sample_id, event_kind, observed_at) VALUES (1, 1, 0, 0)") }
        }
    }

    @Test("a sample's versions are unique by payload hash, and by its first 16 bytes (schema 13); the lookup compares the whole hash")
    func versionUniqueness() throws {
        let archive = try Archive.inMemory()
        let hash = Data((0..<32).map { UInt8($0) })
        var sharesPrefix = hash
        sharesPrefix[31] ^= 0xff
        var differsAt16 = hash
        differsAt16[15] ^= 0xff
        func insert(_ db: Database, sample: Int, _ payload: Data) throws {
            try db.execute(sql: "INSERT INTO sample_versions(sample_id, payload_hash, start_date, end_date, created_observation_id) VALUES (?, ?, 0, 1, 1)",
                           arguments: [sample, payload])
        }
        try archive.writer.write { db in
            try Self.seed(db)
            try db.execute(sql: "INSERT INTO samples(id, sample_type_id, strict_fingerprint, first_seen_observation_id, first_seen_at) VALUES (2, 1, randomblob(32), 1, 0)")
            try insert(db, sample: 1, hash)
            try insert(db, sample: 1, differsAt16)   // another version: the prefixes differ
            try insert(db, sample: 2, hash)          // the same hash in another sample
        }
        for payload in [hash, sharesPrefix] {
            #expect(throws: DatabaseError.self) { try archive.writer.write { db in try insert(db, sample: 1, payload) } }
        }
        try archive.writer.read { db throws in
            func lookup(_ payload: Data) throws -> Int64? {
                try Int64.fetchOne(db, sql: SampleIndexes.versionByPayload, arguments: [1, payload])
            }
            #expect(try lookup(hash) == 1)
            #expect(try lookup(differsAt16) == 2)
            #expect(try lookup(sharesPrefix) == nil, "a shared prefix is not the version")
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_versions") == 3)
        }
    }

    @Test("an archive with a newer schema refuses to open and is left unchanged")
    func newerSchemaRefused() throws {
        let t = TempHome()
        do {
            let node = try t.open()
            try node.archive.writer.write { db in
                try db.execute(sql: "INSERT INTO schema_migrations(version, applied_at, description) VALUES (99, 0, 'from the future')")
            }
        }
        func content() throws -> [String] {
            let q = try rawQueue(t.home.archivePath)
            return try q.read { db in
                try String.fetchAll(db, sql: "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")
                    + (try String.fetchAll(db, sql: "SELECT version || ':' || description FROM schema_migrations ORDER BY version"))
                    + (try String.fetchAll(db, sql: "SELECT key || '=' || value FROM archive_metadata ORDER BY key"))
            }
        }
        let before = try content()
        do {
            _ = try t.open()
            Issue.record("opened an archive with a newer schema")
        } catch let e as ArchiveError {
            #expect(e.code == .newerSchema)
            #expect(e.message.contains("99"))
        }
        #expect(FileManager.default.fileExists(atPath: t.home.archivePath))
        #expect(try content() == before)
    }

    @Test("a failed migration rolls back and never deletes the archive")
    func failedMigration() throws {
        let t = TempHome()
        do {
            let node = try t.open()
            try capture(node, samples: (0..<5).map { hr($0) })
        }
        let pool = try rawPool(t.home.archivePath)
        let archive = Archive(writer: pool, path: t.home.archivePath, lock: nil, logger: Archive.silentLogger)
        let broken = ArchiveMigrations.all + [.init(version: ArchiveMigrations.latestVersion + 1, description: "broken", sql: "CREATE TABLE extra(x); INSERT INTO no_such_table VALUES (1);")]
        do {
            try archive.prepare(clock: t.clock, recoverInterrupted: false, migrations: broken)
            Issue.record("a broken migration succeeded")
        } catch let e as ArchiveError {
            #expect(e.code == .migrationFailed)
        }
        try pool.read { db throws in
            #expect(try Int.fetchOne(db, sql: "SELECT max(version) FROM schema_migrations") == ArchiveMigrations.latestVersion)
            #expect(try db.tableExists("extra") == false)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM samples") == 5)
        }
    }

    @Test("a version-2 archive on disk is upgraded to version 3 with its data intact")
    func upgradeFromV2() throws {
        let t = TempHome()
        try FileManager.default.createDirectory(atPath: t.home.archiveDirectory, withIntermediateDirectories: true)
        do {
            let pool = try rawPool(t.home.archivePath)
            let v2 = Archive(writer: pool, path: t.home.archivePath, lock: nil, logger: Archive.silentLogger)
            try v2.prepare(clock: t.clock, recoverInterrupted: false, migrations: [ArchiveMigrations.all[0]])
            try pool.write { db in
                try db.execute(sql: """
                    INSERT INTO device_chains(id, device_chain_hash, created_at) VALUES (1, 'c', 0);
                    INSERT INTO observations(id, device_chain_id, observed_at, status, trigger_reason, schema_version) VALUES (1, 1, 0, 'completed', 't', 2);
                    """)
            }
        }
        let archive = try Archive.open(path: t.home.archivePath)
        try archive.writer.read { db throws in
            #expect(try Int.fetchOne(db, sql: "SELECT max(version) FROM schema_migrations") == ArchiveMigrations.latestVersion)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM observations") == 1)
            #expect(try db.columns(in: "sample_versions").contains { $0.name == "creation_date" })
        }
    }

    @Test("a SQLite file that is not an archive is refused")
    func notAnArchive() throws {
        let path = NSTemporaryDirectory() + "hp-other-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let q = try rawQueue(path)
        try q.write { db in try db.execute(sql: "CREATE TABLE something(x)") }
        #expect { _ = try Archive.open(path: path) } throws: { ($0 as? ArchiveError)?.code == .notAnArchive }
    }

    @Test("a second writer is refused while the archive is open for writing")
    func writerLock() throws {
        let t = TempHome()
        let node = try t.open()
        #expect { _ = try t.open() } throws: { ($0 as? ArchiveError)?.code == .locked }
        _ = node
    }
}
