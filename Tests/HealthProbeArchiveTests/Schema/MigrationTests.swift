import Foundation
import GRDB
import HealthProbeCanonical
import HealthProbeTestSupport
import HealthProbeSimulator
import Testing
@testable import HealthProbeArchive

/// Schemas 8, 9 and 10 on an archive of 32,000 samples that was at schema 7: the
/// chain-state digest of every observation and the manifest hash of the record
/// exports equal before and after; a migration that fails leaves the schema-7
/// archive as it was. (`ArchiveFixtureV8Tests` does the same for an archive the
/// schema-8 build itself wrote.)
@Suite("Migrations 7 to 10", .serialized)
struct MigrationTests {
    static let types = ["HeartRate", "StepCount", "RespiratoryRate", "OxygenSaturation"].map { SampleTypeDescriptor("HKQuantityTypeIdentifier" + $0) }
    static let perType = 8_000

    static func sample(_ t: Int, _ i: Int, edited: Bool) -> CapturedSample? {
        let h = SplitMix.hash(UInt64(t), UInt64(i), 8)
        if edited && h % 100 == 1 { return nil }
        let start = 1_700_000_000 + Double(i) * 60
        return CapturedSample(uuid: nil, startDate: start, endDate: start + 30, valueKind: .quantity,
                              numericValue: Double(40 + h % 120) + (edited && h % 100 == 0 ? 1 : 0), unit: "count/min",
                              source: SourceDescriptor(name: "Watch", bundleIdentifier: "com.apple.health.test", productType: "Watch6,1",
                                                       version: "10.1", operatingSystemVersion: "10.1"))
    }

    /// 32,000 samples in one observation, then one type again with 1% edited and 1% deleted.
    static func capture(_ node: NodeArchive) throws {
        for (edited, types) in [(false, Array(types.indices)), (true, [0])] {
            let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .benchmark, selectedTypes: types.map { Self.types[$0].identifier }))
            for t in types {
                let run = try session.beginTypeRun(Self.types[t], kind: .fullScan)
                var page: [CapturedSample] = []
                var index = 0
                for i in 0..<perType {
                    if let s = sample(t, i, edited: edited) { page.append(s) }
                    if page.count == 5000 || i == perType - 1 {
                        _ = try run.writePage(index: index, samples: page)
                        index += 1
                        page = []
                    }
                }
                _ = try run.complete()
            }
            _ = try session.finish()
        }
    }

    /// Every observation's digest, and the manifest hash of the record exports (JSON, CSV) of each
    /// observation, reproduced with a fixed envelope.
    static func fingerprint(_ t: TempHome, _ dir: TempDir, _ name: String) throws -> ([ChainStateDigest.Result], [String]) {
        let node = try t.open()
        let observations = try node.archive.writer.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM observations ORDER BY id") }
        let digests = try node.archive.writer.read { db in try observations.map { try ChainStateDigest.compute(db, observationID: $0) } }
        var manifests: [String] = []
        for kind in [ExportKind.observationRecordsJSON, .observationRecordsCSV] {
            for at in observations {
                var r = ExportRequest(kind: kind)
                r.at = at
                manifests.append(try Exporter.reproduce(node: node, request: r, scratch: dir.file(name)))
            }
        }
        return (digests, manifests)
    }

    /// The samples and versions tables as schema 8 had them (TEXT hashes), for `downgrade`.
    static let v8Tables = """
        CREATE TABLE samples_v8 (
            id INTEGER PRIMARY KEY,
            sample_type_id INTEGER NOT NULL REFERENCES sample_types(id),
            sample_uuid_hash TEXT,
            strict_fingerprint TEXT NOT NULL,
            semantic_fingerprint TEXT,
            fuzzy_key TEXT,
            first_seen_observation_id INTEGER NOT NULL REFERENCES observations(id),
            first_seen_at REAL NOT NULL,
            UNIQUE(sample_type_id, strict_fingerprint)
        );
        INSERT INTO samples_v8 SELECT id, sample_type_id, nullif(lower(hex(sample_uuid_hash)), ''), lower(hex(strict_fingerprint)),
            nullif(lower(hex(semantic_fingerprint)), ''), fuzzy_key, first_seen_observation_id, first_seen_at FROM samples ORDER BY id;
        DROP TABLE samples;
        ALTER TABLE samples_v8 RENAME TO samples;
        CREATE INDEX idx_samples_uuid_hash ON samples(sample_uuid_hash);
        CREATE INDEX idx_samples_type_semantic ON samples(sample_type_id, semantic_fingerprint);
        CREATE INDEX idx_samples_first_seen ON samples(first_seen_observation_id);
        CREATE TABLE sample_versions_v8 (
            id INTEGER PRIMARY KEY,
            sample_id INTEGER NOT NULL REFERENCES samples(id),
            payload_hash TEXT NOT NULL,
            start_date REAL NOT NULL,
            end_date REAL NOT NULL,
            value_kind TEXT,
            numeric_value REAL,
            unit TEXT,
            category_value INTEGER,
            workout_activity_type INTEGER,
            duration_seconds REAL,
            source_revision_id INTEGER REFERENCES source_revisions(id),
            hk_device_id INTEGER REFERENCES hk_devices(id),
            metadata_id INTEGER REFERENCES metadata_blobs(id),
            created_observation_id INTEGER NOT NULL REFERENCES observations(id),
            creation_date REAL,
            UNIQUE(sample_id, payload_hash)
        );
        INSERT INTO sample_versions_v8 SELECT id, sample_id, lower(hex(payload_hash)), start_date, end_date, value_kind, numeric_value, unit,
            category_value, workout_activity_type, duration_seconds, source_revision_id, hk_device_id, metadata_id, created_observation_id,
            creation_date FROM sample_versions ORDER BY id;
        DROP TABLE sample_versions;
        ALTER TABLE sample_versions_v8 RENAME TO sample_versions;
        CREATE INDEX idx_sample_versions_time ON sample_versions(start_date, end_date);
        CREATE INDEX idx_sample_versions_created ON sample_versions(created_observation_id);
        """

    /// An in-memory database migrated only as far as `version`.
    static func migrated(toVersion version: Int) throws -> DatabaseQueue {
        let q = try DatabaseQueue()
        try ArchiveMigrations.migrate(q, migrations: ArchiveMigrations.all.filter { $0.version <= version }, now: 1_750_000_000)
        return q
    }

    /// What the migrations up to `version` created (tables and indexes with their SQL).
    /// Shipped migrations are never edited, so this is that schema exactly.
    static func created(atVersion version: Int) throws -> [(type: String, name: String, table: String, sql: String)] {
        try migrated(toVersion: version).read { db in
            try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL AND type IN ('table', 'index') ORDER BY name")
                .map { ($0[0], $0[1], $0[2], $0[3]) }
        }
    }

    /// Runs `sql` on the archive at `path` in one transaction (with `body`'s SQL first, when
    /// it reads the archive to make it), then forgets every migration above `version`: the
    /// archive then records schema `version`.
    static func rewrite(_ path: String, toVersion version: Int, foreignKeysOff: Bool = false, _ sql: (Database) throws -> String) throws {
        let q = try DatabaseQueue(path: path)
        try q.writeWithoutTransaction { db in
            if foreignKeysOff { try db.execute(sql: "PRAGMA foreign_keys = OFF") }
            try db.inTransaction {
                try db.execute(sql: try sql(db) + """
                    ;
                    DELETE FROM schema_migrations WHERE version > \(version);
                    DELETE FROM grdb_migrations WHERE CAST(substr(identifier, 2) AS INTEGER) > \(version);
                    UPDATE archive_metadata SET value = '\(version)' WHERE key = 'schema_version';
                    """)
                return .commit
            }
            try db.checkpoint(.truncate)
        }
    }

    /// Rebuilds `table` of the archive at `path` row for row as schema `version` created it,
    /// with that schema's indexes of it (all read from schema `version` itself), its rows
    /// given by `columns` (the latest table's, in the old table's order); then the archive
    /// records schema `version`.
    static func rebuild(_ path: String, table: String, asIn version: Int, columns: String = "*") throws {
        let schema = try created(atVersion: version)
        let create = try #require(schema.first { $0.type == "table" && $0.name == table }).sql
        let indexes = schema.filter { $0.type == "index" && $0.table == table }.map(\.sql)
        let old = "\(table)_v\(version)"
        // Each of these tables was made by a rebuild and a rename, so SQLite quotes its name.
        #expect(create.hasPrefix("CREATE TABLE \"\(table)\""))
        try rewrite(path, toVersion: version, foreignKeysOff: true) { _ in
            create.replacingOccurrences(of: "\"\(table)\"", with: old) + ";" + """
                INSERT INTO \(old) SELECT \(columns) FROM \(table) ORDER BY id;
                DROP TABLE \(table);
                ALTER TABLE \(old) RENAME TO \(table);
                """ + indexes.joined(separator: ";\n")
        }
    }

    /// Puts an archive at the latest schema back to what schema 15 had: no views.
    static func downgradeTo15(_ path: String) throws {
        try rewrite(path, toVersion: 15) { db in
            try String.fetchAll(db, sql: "SELECT 'DROP VIEW ' || name FROM sqlite_master WHERE type = 'view' ORDER BY name").joined(separator: ";\n")
        }
    }

    /// Puts an archive at the latest schema back to what schema 14 had: the events table
    /// as 14 had it (kinds as names).
    static func downgradeTo14(_ path: String) throws {
        try downgradeTo15(path)
        try rebuild(path, table: "sample_observation_events", asIn: 14, columns: """
            id, observation_id, sample_id, version_id, \(EventKind.nameSQL("event_kind")), observed_at, \(EvidenceKind.nameSQL("evidence_kind"))
            """)
    }

    /// Puts an archive at the latest schema back to what schema 13 had: samples as 13 had
    /// them (`UNIQUE(sample_type_id, strict_fingerprint)` in the table).
    static func downgradeTo13(_ path: String) throws {
        try downgradeTo14(path)
        try rebuild(path, table: "samples", asIn: 13)
    }

    /// Puts an archive at the latest schema back to what schema 12 had: sample_versions as
    /// 12 had it (`UNIQUE(sample_id, payload_hash)` in the table).
    static func downgradeTo12(_ path: String) throws {
        try downgradeTo13(path)
        try rebuild(path, table: "sample_versions", asIn: 12)
    }

    /// Puts an archive at the latest schema back to what schema 11 had: no row bounds in
    /// observations, and the two indexes 12 dropped, read from schema 11 itself.
    static func downgradeTo11(_ path: String) throws {
        try downgradeTo12(path)
        let v11 = try created(atVersion: 11)
        let indexes = try ["idx_samples_first_seen", "idx_sample_versions_created"].map { name in
            try #require(v11.first { $0.type == "index" && $0.name == name }).sql
        }
        try rewrite(path, toVersion: 11) { _ in
            """
            ALTER TABLE observations DROP COLUMN samples_before;
            ALTER TABLE observations DROP COLUMN versions_before;
            """ + indexes.joined(separator: ";\n")
        }
    }

    /// Puts an archive at the latest schema back to what schema 10 had: the semantic
    /// fingerprint index on whole fingerprints, read from schema 10 itself.
    static func downgradeTo10(_ path: String) throws {
        try downgradeTo11(path)
        let v10 = try created(atVersion: 10)
        let index = try #require(v10.first { $0.type == "index" && $0.name == "idx_samples_type_semantic" }).sql
        try rewrite(path, toVersion: 10) { _ in "DROP INDEX idx_samples_type_semantic;" + index }
    }

    /// Puts an archive at the latest schema back to what schema 9 had: the events table
    /// rebuilt as 9 created it (its UNIQUE in another column order) with 9's indexes of it,
    /// and every other index 9 had that 10 dropped; all read from schema 9 itself.
    static func downgradeTo9(_ path: String) throws {
        try downgradeTo10(path)
        let v9 = try created(atVersion: 9)
        let events = "sample_observation_events"
        let table = try #require(v9.first { $0.type == "table" && $0.name == events }).sql
        try rewrite(path, toVersion: 9, foreignKeysOff: true) { db in
            let present = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index'"))
            let indexes = v9.filter { $0.type == "index" && ($0.table == events || !present.contains($0.name)) }.map(\.sql)
            return table.replacingOccurrences(of: events, with: "events_v9") + ";" + """
                INSERT INTO events_v9 SELECT id, observation_id, sample_id, version_id, event_kind, observed_at, evidence_kind
                    FROM sample_observation_events ORDER BY id;
                DROP TABLE sample_observation_events;
                ALTER TABLE events_v9 RENAME TO sample_observation_events;
                """ + indexes.joined(separator: ";\n")
        }
    }

    /// Puts an archive at the latest schema back to what schema 7 had: the events
    /// table of 9 (10), hashes as hex TEXT and no export schema versions (9), the
    /// index 8 dropped, and the records of 8 and later removed.
    /// `downgradeIsSchema7` shows the result has schema 7's structure.
    static func downgrade(_ path: String) throws {
        try downgradeTo9(path)
        try rewrite(path, toVersion: 7, foreignKeysOff: true) { _ in
            v8Tables + """
                ALTER TABLE export_manifests DROP COLUMN schema_version;
                CREATE INDEX idx_sample_versions_sample ON sample_versions(sample_id)
                """
        }
    }

    /// Tables, columns, indexes (with their columns and partial clauses) and foreign keys:
    /// what an archive's schema is, whatever the text of its CREATE statements.
    static func structure(_ db: Database) throws -> [String] {
        var out: [String] = []
        for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name") {
            for c in try Row.fetchAll(db, sql: "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?) ORDER BY cid", arguments: [table]) {
                out.append("\(table).\(c[0] as String) \(c[1] as String) notnull=\(c[2] as Int) default=\(c[3] as String? ?? "-") pk=\(c[4] as Int)")
            }
            for f in try Row.fetchAll(db, sql: "SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?) ORDER BY id, seq", arguments: [table]) {
                out.append("\(table) fk \(f[1] as String) -> \(f[0] as String).\(f[2] as String? ?? "")")
            }
            for i in try Row.fetchAll(db, sql: "SELECT name, \"unique\", partial FROM pragma_index_list(?) ORDER BY name", arguments: [table]) {
                let name: String = i[0]
                let cols = try String.fetchAll(db, sql: "SELECT coalesce(name, '<expression>') FROM pragma_index_info(?) ORDER BY seqno", arguments: [name]).joined(separator: ",")
                out.append("\(table) index \(name)(\(cols)) unique=\(i[1] as Int) partial=\(i[2] as Int)")
            }
        }
        return out
    }

    /// What an archive is: its structure, its migration records and every row of
    /// samples and sample_versions, as SQLite quotes them.
    static func contents(_ path: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in
            try structure(db)
                + String.fetchAll(db, sql: "SELECT version || ' ' || description FROM schema_migrations ORDER BY version")
                + String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
                + rows(db)
        }
    }

    /// Every row of samples, sample_versions and sample_observation_events, as SQLite quotes them.
    static func rows(_ db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT quote(id) || quote(sample_type_id) || quote(sample_uuid_hash) || quote(strict_fingerprint) || quote(semantic_fingerprint) || quote(first_seen_observation_id) FROM samples ORDER BY id")
                + String.fetchAll(db, sql: "SELECT quote(id) || quote(sample_id) || quote(payload_hash) || quote(start_date) || quote(numeric_value) || quote(created_observation_id) FROM sample_versions ORDER BY id")
                // Kinds by name, whether stored as names (before schema 15) or codes.
                + String.fetchAll(db, sql: """
                    SELECT quote(id) || quote(observation_id) || quote(sample_id) || quote(version_id) || quote(coalesce(\(EventKind.nameSQL("event_kind")), event_kind))
                        || quote(observed_at) || quote(coalesce(\(EvidenceKind.nameSQL("evidence_kind")), evidence_kind)) FROM sample_observation_events ORDER BY id
                    """)
    }

    static func state(_ path: String) throws -> (version: Int?, index: Bool, hashType: String?) {
        // `index`: schema 7's idx_sample_versions_sample.
        try DatabaseQueue(path: path).read { db in
            (try Int.fetchOne(db, sql: "SELECT max(version) FROM schema_migrations"),
             try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM sqlite_master WHERE name = 'idx_sample_versions_sample'") ?? false,
             try String.fetchOne(db, sql: "SELECT typeof(strict_fingerprint) FROM samples LIMIT 1"))
        }
    }

    @Test("32,000 samples (two pages a type): digests and export manifest hashes equal across migrations 8 to 15; hashes become blobs")
    func migrates() throws {
        let t = TempHome(), dir = TempDir()
        try Self.capture(try t.open())
        let (digestsBefore, manifestBefore) = try Self.fingerprint(t, dir, "before")
        #expect(digestsBefore.count == 2 && digestsBefore.last?.visibleCount ?? 0 > 4 * Self.perType * 97 / 100)
        try Self.downgrade(t.home.archivePath)
        #expect(try Self.state(t.home.archivePath) == (7, true, "text"))
        // Opening for writing migrates.
        let (digestsAfter, manifestAfter) = try Self.fingerprint(t, dir, "after")
        #expect(try Self.state(t.home.archivePath) == (ArchiveMigrations.latestVersion, false, "blob"))
        #expect(digestsAfter.map(\.digest) == digestsBefore.map(\.digest))
        #expect(manifestAfter == manifestBefore && manifestBefore.count == 4)
        let report = try ArchiveVerifier.run(try t.open(), mode: .full)
        #expect(report.checks.allSatisfy { $0.status != .problem }, "\(report.checks.filter { $0.status == .problem })")
    }

    @Test("the test's downgrade gives schema 7's structure, and migrating it gives the latest schema's")
    func downgradeIsSchema7() throws {
        let t = TempHome()
        try t.simulate(seed: 4, days: [2])
        try Self.downgrade(t.home.archivePath)
        #expect(try DatabaseQueue(path: t.home.archivePath).read(Self.structure) == Self.migrated(toVersion: 7).read(Self.structure))
        _ = try t.open()
        let latest = try Self.migrated(toVersion: ArchiveMigrations.latestVersion)
        #expect(try DatabaseQueue(path: t.home.archivePath).read(Self.structure) == latest.read(Self.structure))
    }

    /// Runs this build's migrations with `version` replaced by its `sql` followed by a
    /// statement that fails: the migration must throw and leave the schema, migration
    /// records and every sample, version and event row as they were.
    static func expectFailedMigrationChangesNothing(_ path: String, version: Int, sql: String) throws {
        let before = try contents(path)
        let broken = ArchiveMigrations.all.filter { $0.version < version }
            + [.init(version: version, description: "broken", sql: sql + "INSERT INTO no_such_table VALUES (1);")]
        let pool = try DatabasePool(path: path)
        #expect(throws: ArchiveError.self) { try ArchiveMigrations.migrate(pool, migrations: broken, now: 1_750_000_000) }
        try pool.writeWithoutTransaction { try $0.checkpoint(.truncate) }
        try pool.close()
        #expect(try contents(path) == before, "schema, migration records and every sample, version and event row unchanged")
    }

    @Test("a migration 9 that fails leaves the archive as migration 8 left it")
    func failedLeavesV8() throws {
        let t = TempHome()
        try t.simulate(seed: 4, days: [3])
        try Self.downgrade(t.home.archivePath)
        // Each migration commits on its own: 8 first, then a 9 that fails.
        let to8 = try DatabasePool(path: t.home.archivePath)
        try ArchiveMigrations.migrate(to8, migrations: ArchiveMigrations.all.filter { $0.version <= 8 }, now: 1_750_000_000)
        try to8.writeWithoutTransaction { try $0.checkpoint(.truncate) }
        try to8.close()
        #expect(try Self.state(t.home.archivePath) == (8, false, "text"))
        try Self.expectFailedMigrationChangesNothing(t.home.archivePath, version: 9, sql: SchemaV9.sql)
        #expect(try Self.state(t.home.archivePath) == (8, false, "text"))
    }

    /// A simulated archive put back to schema `version` (by `downgrade`, checked against that
    /// schema's structure), then a failing migration `version + 1` (`sql`), which must change
    /// nothing, then the real migrations (opening the archive). Returns the structure after
    /// and whether every sample, version and event row was kept.
    static func failThenMigrate(from version: Int, downgrade: (String) throws -> Void, sql: String) throws -> (structure: [String], rowsKept: Bool) {
        let t = TempHome()
        try t.simulate(seed: 4, days: [3, 1])
        try downgrade(t.home.archivePath)
        #expect(try Self.state(t.home.archivePath).version == version)
        #expect(try DatabaseQueue(path: t.home.archivePath).read(Self.structure) == Self.migrated(toVersion: version).read(Self.structure))
        try Self.expectFailedMigrationChangesNothing(t.home.archivePath, version: version + 1, sql: sql)
        #expect(try Self.state(t.home.archivePath).version == version)
        let rowsBefore = try DatabaseQueue(path: t.home.archivePath).read(Self.rows)
        _ = try t.open()
        #expect(try Self.state(t.home.archivePath).version == ArchiveMigrations.latestVersion)
        let after = try DatabaseQueue(path: t.home.archivePath).read(Self.structure)
        #expect(after == (try Self.migrated(toVersion: ArchiveMigrations.latestVersion).read(Self.structure)))
        return (after, try DatabaseQueue(path: t.home.archivePath).read(Self.rows) == rowsBefore && rowsBefore.count > 1000)
    }

    @Test("a migration 10 that fails leaves the archive as migration 9 left it; a real one keeps every event row")
    func failedLeavesV9() throws {
        let (after, kept) = try Self.failThenMigrate(from: 9, downgrade: Self.downgradeTo9, sql: SchemaV10.sql)
        #expect(kept)
        #expect(after.contains { $0.contains("sqlite_autoindex_sample_observation_events_1(observation_id,event_kind,sample_id) unique=1") })
        #expect(!after.contains { $0.contains("idx_events_observation_kind") })
    }

    @Test("a migration 11 that fails leaves the archive as migration 10 left it; a real one keeps every row and indexes the fingerprints' prefixes")
    func failedLeavesV10() throws {
        let (after, kept) = try Self.failThenMigrate(from: 10, downgrade: Self.downgradeTo10, sql: SchemaV11.sql)
        #expect(kept)
        #expect(after.contains { $0.contains("index idx_samples_type_semantic(sample_type_id,<expression>) unique=0 partial=1") })
    }

    @Test("a migration 12 that fails leaves the archive as migration 11 left it; a real one bounds every observation's rows and drops two indexes")
    func failedLeavesV11() throws {
        let t = TempHome()
        try t.simulate(seed: 4, days: [3, 1, 2])
        // The bounds the capture recorded, and the rows each observation wrote.
        let (recorded, written) = try DatabaseQueue(path: t.home.archivePath).read { db in
            (try Row.fetchAll(db, sql: "SELECT id, samples_before, versions_before FROM observations ORDER BY id").map { [$0[0], $0[1], $0[2]] as [Int64] },
             try Row.fetchAll(db, sql: """
                SELECT o.id, (SELECT min(id) FROM samples WHERE first_seen_observation_id = o.id), (SELECT count(*) FROM samples WHERE first_seen_observation_id = o.id),
                       (SELECT min(id) FROM sample_versions WHERE created_observation_id = o.id), (SELECT count(*) FROM sample_versions WHERE created_observation_id = o.id)
                FROM observations o ORDER BY o.id
                """).map { [$0[0], $0[1] ?? 0, $0[2], $0[3] ?? 0, $0[4]] as [Int64] })
        }
        #expect(written.count == 3 && written.allSatisfy { $0[2] > 0 && $0[4] > 0 })
        for (r, w) in zip(recorded, written) {
            // Every row an observation wrote lies above its bounds; the first just above.
            #expect(r[1] == w[1] - 1 && r[2] == w[3] - 1, "observation \(r[0]): bounds \(r), rows \(w)")
        }
        try Self.downgradeTo11(t.home.archivePath)
        #expect(try Self.state(t.home.archivePath).version == 11)
        #expect(try DatabaseQueue(path: t.home.archivePath).read(Self.structure) == Self.migrated(toVersion: 11).read(Self.structure))
        try Self.expectFailedMigrationChangesNothing(t.home.archivePath, version: 12, sql: SchemaV12.sql)
        let rowsBefore = try DatabaseQueue(path: t.home.archivePath).read(Self.rows)
        _ = try t.open()
        let (after, migrated) = try DatabaseQueue(path: t.home.archivePath).read { db in
            (try Self.structure(db), try Row.fetchAll(db, sql: "SELECT id, samples_before, versions_before FROM observations ORDER BY id").map { [$0[0], $0[1], $0[2]] as [Int64] })
        }
        #expect(after == (try Self.migrated(toVersion: ArchiveMigrations.latestVersion).read(Self.structure)))
        #expect(try DatabaseQueue(path: t.home.archivePath).read(Self.rows) == rowsBefore)
        // The migration finds the same bounds from the rows.
        #expect(migrated == recorded)
        #expect(!after.contains { $0.contains("idx_samples_first_seen") || $0.contains("idx_sample_versions_created") })
    }

    @Test("a migration 13 that fails leaves the archive as migration 12 left it; a real one keeps every row and indexes the payload hashes' prefixes")
    func failedLeavesV12() throws {
        let (after, kept) = try Self.failThenMigrate(from: 12, downgrade: Self.downgradeTo12, sql: SchemaV13.sql)
        #expect(kept)
        #expect(after.contains { $0.contains("sample_versions index idx_sample_versions_payload(sample_id,<expression>) unique=1 partial=0") })
        #expect(!after.contains { $0.contains("sqlite_autoindex_sample_versions") })
    }

    @Test("a migration 14 that fails leaves the archive as migration 13 left it; a real one keeps every row and indexes the fingerprints' prefixes")
    func failedLeavesV13() throws {
        let (after, kept) = try Self.failThenMigrate(from: 13, downgrade: Self.downgradeTo13, sql: SchemaV14.sql)
        #expect(kept)
        #expect(after.contains { $0.contains("samples index idx_samples_type_fingerprint(sample_type_id,<expression>) unique=1 partial=0") })
        #expect(!after.contains { $0.contains("sqlite_autoindex_samples") })
    }

    @Test("a migration 14 over two samples of a type whose fingerprints share 16 bytes fails and leaves schema 13")
    func sharedPrefixRefusesMigration() throws {
        let t = TempHome()
        try t.simulate(seed: 4, days: [3])
        try Self.downgradeTo13(t.home.archivePath)
        // A second sample with the first one's prefix and another tail, as only a crafted pair could have.
        try Self.rewrite(t.home.archivePath, toVersion: 13) { db in
            let first = try #require(try Row.fetchOne(db, sql: "SELECT sample_type_id, strict_fingerprint, first_seen_observation_id FROM samples ORDER BY id LIMIT 1"))
            let fp: Data = first[1]
            let tail = (fp.prefix(16) + Data(count: 16)).map { String(format: "%02x", $0) }.joined()
            return "INSERT INTO samples(sample_type_id, strict_fingerprint, first_seen_observation_id, first_seen_at) VALUES (\(first[0] as Int64), x'\(tail)', \(first[2] as Int64), 0)"
        }
        let before = try Self.contents(t.home.archivePath)
        #expect(throws: ArchiveError.self) { _ = try t.open() }
        #expect(try Self.contents(t.home.archivePath) == before)
        #expect(try Self.state(t.home.archivePath).version == 13)
    }

    @Test("a migration 15 that fails leaves the archive as migration 14 left it; a real one keeps every event, its kinds as codes")
    func failedLeavesV14() throws {
        let (after, kept) = try Self.failThenMigrate(from: 14, downgrade: Self.downgradeTo14, sql: SchemaV15.sql)
        #expect(kept)
        #expect(after.contains("sample_observation_events.event_kind INTEGER notnull=1 default=- pk=0"))
        #expect(after.contains("sample_observation_events.evidence_kind INTEGER notnull=0 default=- pk=0"))
    }

    @Test("a migration 15 over an event kind no kind has fails and leaves schema 14")
    func unknownKindRefusesMigration() throws {
        let t = TempHome()
        try t.simulate(seed: 4, days: [3])
        try Self.downgradeTo14(t.home.archivePath)
        try Self.rewrite(t.home.archivePath, toVersion: 14) { _ in "UPDATE sample_observation_events SET evidence_kind = 'rumour' WHERE id = (SELECT min(id) FROM sample_observation_events)" }
        let before = try Self.contents(t.home.archivePath)
        #expect(throws: ArchiveError.self) { _ = try t.open() }
        #expect(try Self.contents(t.home.archivePath) == before)
        #expect(try Self.state(t.home.archivePath).version == 14)
    }
}
