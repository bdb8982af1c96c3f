import Foundation
import GRDB
import HealthProbeCanonical
import HealthProbeTestSupport
import HealthProbeSimulator
import Testing
@testable import HealthProbeArchive

/// Schema 8 on an archive of 200,000 samples that was at schema 7: the chain-state
/// digest of every observation and the manifest hash of an export equal before and
/// after; a migration that fails leaves the schema-7 archive as it was.
@Suite("Migration 7 to 8", .serialized)
struct MigrationV8Tests {
    static let types = ["HeartRate", "StepCount", "RespiratoryRate", "OxygenSaturation"].map { SampleTypeDescriptor("HKQuantityTypeIdentifier" + $0) }
    static let perType = 50_000

    static func sample(_ t: Int, _ i: Int, edited: Bool) -> CapturedSample? {
        let h = SplitMix.hash(UInt64(t), UInt64(i), 8)
        if edited && h % 100 == 1 { return nil }
        let start = 1_700_000_000 + Double(i) * 60
        return CapturedSample(uuid: nil, startDate: start, endDate: start + 30, valueKind: .quantity,
                              numericValue: Double(40 + h % 120) + (edited && h % 100 == 0 ? 1 : 0), unit: "count/min",
                              source: SourceDescriptor(name: "Watch", bundleIdentifier: "com.apple.health.test", productType: "Watch6,1",
                                                       version: "10.1", operatingSystemVersion: "10.1"))
    }

    /// 200,000 samples in one observation, then one type again with 1% edited and 1% deleted.
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

    /// Puts a schema-8 archive back to what schema 7 had: the index 8 drops, and the records of 8 removed.
    static func downgrade(_ path: String) throws {
        let q = try DatabaseQueue(path: path)
        try q.write { db in
            try db.execute(sql: """
                CREATE INDEX idx_sample_versions_sample ON sample_versions(sample_id);
                DELETE FROM schema_migrations WHERE version = 8;
                DELETE FROM grdb_migrations WHERE identifier = 'v8';
                UPDATE archive_metadata SET value = '7' WHERE key = 'schema_version';
                """)
        }
        try q.writeWithoutTransaction { try $0.checkpoint(.truncate) }
    }

    /// What a schema-7 archive is: its schema, its migration records, every observation's digest.
    static func contents(_ path: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in
            try String.fetchAll(db, sql: "SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master ORDER BY name")
                + String.fetchAll(db, sql: "SELECT version || ' ' || description FROM schema_migrations ORDER BY version")
                + String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
                + Int64.fetchAll(db, sql: "SELECT id FROM observations ORDER BY id").map { try ChainStateDigest.compute(db, observationID: $0).digest }
        }
    }

    static func state(_ path: String) throws -> (version: Int?, index: Bool) {
        try DatabaseQueue(path: path).read { db in
            (try Int.fetchOne(db, sql: "SELECT max(version) FROM schema_migrations"),
             try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM sqlite_master WHERE name = 'idx_sample_versions_sample'") ?? false)
        }
    }

    @Test("200,000 samples: digests and an export's manifest hash equal across the migration; the index goes")
    func migrates() throws {
        let t = TempHome(), dir = TempDir()
        try Self.capture(try t.open())
        let (digestsBefore, manifestBefore) = try Self.fingerprint(t, dir, "before")
        #expect(digestsBefore.count == 2 && digestsBefore.last?.visibleCount ?? 0 > 195_000)
        try Self.downgrade(t.home.archivePath)
        #expect(try Self.state(t.home.archivePath) == (7, true))
        // Opening for writing migrates.
        let (digestsAfter, manifestAfter) = try Self.fingerprint(t, dir, "after")
        #expect(try Self.state(t.home.archivePath) == (8, false))
        #expect(digestsAfter.map(\.digest) == digestsBefore.map(\.digest))
        #expect(manifestAfter == manifestBefore && manifestBefore.count == 4)
        let report = try ArchiveVerifier.run(try t.open(), mode: .full)
        #expect(report.checks.allSatisfy { $0.status != .problem }, "\(report.checks.filter { $0.status == .problem })")
    }

    @Test("a migration 8 that fails leaves the schema-7 archive as it was")
    func failedLeavesV7() throws {
        let t = TempHome()
        try t.simulate(seed: 4, days: [3])
        try Self.downgrade(t.home.archivePath)
        let before = try Self.contents(t.home.archivePath)
        let broken = ArchiveMigrations.all.filter { $0.version < 8 }
            + [.init(version: 8, description: "broken", sql: "DROP INDEX idx_sample_versions_sample; INSERT INTO no_such_table VALUES (1);")]
        let pool = try DatabasePool(path: t.home.archivePath)
        #expect(throws: ArchiveError.self) { try ArchiveMigrations.migrate(pool, migrations: broken, now: 1_750_000_000) }
        try pool.writeWithoutTransaction { try $0.checkpoint(.truncate) }
        try pool.close()
        #expect(try Self.state(t.home.archivePath) == (7, true))
        #expect(try Self.contents(t.home.archivePath) == before, "schema, migration records and every observation's digest unchanged")
    }

    @Test("lookups of a sample's versions use the UNIQUE(sample_id, payload_hash) index")
    func plan() throws {
        let archive = try Archive.inMemory()
        try archive.writer.read { db in
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT id, payload_hash FROM sample_versions WHERE sample_id = ?", arguments: [1])
                .map { $0["detail"] as String }.joined(separator: "; ")
            #expect(plan.contains("sqlite_autoindex_sample_versions_1"), "\(plan)")
        }
    }
}
