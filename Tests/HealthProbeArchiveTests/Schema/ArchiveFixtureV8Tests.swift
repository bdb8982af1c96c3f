import Foundation
import GRDB
import HealthProbeCanonical
import HealthProbeTestSupport
import Testing
@testable import HealthProbeArchive

/// The schema-8 archive the schema-8 build wrote (`Tests/fixtures/archive-v8`), opened
/// by this build: it migrates, and every answer the schema-8 build gave about it
/// (chain-state digests, bundles, exports) is given again, byte for byte.
@Suite("A schema-8 archive written by the schema-8 build")
struct ArchiveFixtureV8Tests {
    @Test("migrates to the latest schema; digests, bundle manifest hashes and export manifest hashes are the schema-8 build's")
    func sameAnswers() throws {
        let t = TempHome(), dir = TempDir()
        try ArchiveFixtureV8.install(into: t)
        #expect(try ArchiveFixtureV8.schemaVersion(t.home.archivePath) == 8)
        let node = try t.open()
        #expect(try ArchiveFixtureV8.schemaVersion(t.home.archivePath) == ArchiveMigrations.latestVersion)
        try Self.expectSameAnswers(node, dir)
    }

    /// Every answer the schema-8 build gave about the fixture: digests, bundles, exports,
    /// and a full verification without a problem.
    static func expectSameAnswers(_ node: NodeArchive, _ dir: TempDir) throws {
        let expected = try ArchiveFixtureV8.expected()
        #expect(expected.count == 5)
        try node.archive.writer.read { db in
            // Stored as 32-byte blobs now, every one of them.
            let stored = try Row.fetchOne(db, sql: """
                SELECT count(*), sum(typeof(strict_fingerprint) = 'blob' AND length(strict_fingerprint) = 32),
                       sum(sample_uuid_hash IS NULL OR length(sample_uuid_hash) = 32), sum(semantic_fingerprint IS NULL OR length(semantic_fingerprint) = 32)
                FROM samples
                """)!
            #expect(stored[0] as Int == 2035 && stored[1] as Int == 2035 && stored[2] as Int == 2035 && stored[3] as Int == 2035)
            var previous: String?
            for e in expected {
                let d = try ChainStateDigest.compute(db, observationID: e.id)
                #expect(d.digest == e.digest, "observation \(e.id)")
                #expect(d.visibleCount == e.visibleCount, "observation \(e.id)")
                let (_, trailer, hash) = try ObservationBundleBuilder.build(db, observationID: e.id, previousManifestHash: previous) { _, _, _ in }
                #expect(hash == e.bundleManifestHash, "bundle of observation \(e.id)")
                #expect(trailer.itemCount == e.bundleItemCount, "bundle of observation \(e.id)")
                previous = hash
            }
        }
        // Every export the schema-8 build recorded, made again with its id and time (and the
        // schema version its header named: an export names the archive's schema).
        let exports = try node.archive.writer.read { db in
            try Row.fetchAll(db, sql: """
                SELECT export_id, export_kind, created_at, manifest_hash, from_observation_id, to_observation_id, as_of_observation_id, schema_version
                FROM export_manifests WHERE status = 'completed' ORDER BY id
                """)
        }
        #expect(exports.count == 6)
        for (i, r) in exports.enumerated() {
            #expect(r["schema_version"] as Int? == 8, "migration 9 records the schema each export was made under")
            let kind = try #require(ExportKind(rawValue: r["export_kind"]))
            var request = ExportRequest(kind: kind)
            if kind == .observationDiffJSON {
                request.from = r["from_observation_id"]
                request.to = r["to_observation_id"]
            } else {
                request.at = r["from_observation_id"]
            }
            request.asOf = r["as_of_observation_id"]
            // The schema-8 build wrote export format 1.
            request.formatVersion = 1
            let result = try Exporter.writeUnrecorded(archive: node.archive, chainHash: node.deviceChainHash, request: request,
                                                      out: dir.file("export-\(i)"), exportID: r["export_id"], createdAt: r["created_at"],
                                                      schemaVersion: r["schema_version"])
            #expect(result.manifestHash == r["manifest_hash"] as String, "\(kind.rawValue)")
        }
        let report = try ArchiveVerifier.run(node, mode: .full)
        #expect(report.checks.allSatisfy { $0.status != .problem }, "\(report.checks.filter { $0.status == .problem })")
    }

    @Test("a fingerprint that is not a hash stops migration 9, which leaves the schema-8 archive as it was")
    func badHashRollsBack() throws {
        let t = TempHome()
        try ArchiveFixtureV8.install(into: t)
        let path = t.home.archivePath
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE samples SET strict_fingerprint = 'not a hash' WHERE id = 7")
        }
        let before = try MigrationTests.contents(path)
        #expect(throws: ArchiveError.self) { _ = try t.open() }
        #expect(try ArchiveFixtureV8.schemaVersion(path) == 8)
        #expect(try MigrationTests.contents(path) == before, "schema, migration records and every row of samples unchanged")
    }

    @Test("a full disk stops the migrations: a storage error naming the directory and the fix, the schema-8 archive as it was; with room, it migrates")
    func fullDiskRollsBack() throws {
        let t = TempHome()
        try ArchiveFixtureV8.install(into: t)
        let path = t.home.archivePath
        let before = try MigrationTests.contents(path)
        // Cap the file a little above its size: the rebuilt tables then fail with SQLITE_FULL.
        let capped = try DatabaseQueue(path: path)
        try capped.writeWithoutTransaction { db in
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            try db.execute(sql: "PRAGMA max_page_count = \(pages + 20)")
        }
        do {
            try ArchiveMigrations.migrate(capped, now: 1_750_000_000)
            Issue.record("the migrations did not fill the capped file")
        } catch let e as ArchiveError {
            #expect(e.code == .storage)
            #expect(e.message.contains("the disk holding \(t.home.archiveDirectory) filled") && e.message.contains("free space there"), "\(e.message)")
            #expect(e.message.contains("rolled back and the archive is unchanged (schema 8)"), "\(e.message)")
        }
        try capped.close()
        #expect(try MigrationTests.contents(path) == before, "schema, migration records and every row of samples unchanged")
        let node = try t.open()
        #expect(try ArchiveFixtureV8.schemaVersion(path) == ArchiveMigrations.latestVersion)
        try Self.expectSameAnswers(node, TempDir())
    }

    @Test("a migration that fails after others committed says the archive stays at the last one")
    func failsAfterOthers() throws {
        let t = TempHome()
        try ArchiveFixtureV8.install(into: t)
        let broken = ArchiveMigrations.all.filter { $0.version <= 9 }
            + [.init(version: 10, description: "broken", sql: "INSERT INTO no_such_table VALUES (1);")]
        let queue = try DatabaseQueue(path: t.home.archivePath)
        do {
            try ArchiveMigrations.migrate(queue, migrations: broken, now: 1_750_000_000)
            Issue.record("the broken migration did not fail")
        } catch let e as ArchiveError {
            #expect(e.code == .migrationFailed)
            #expect(e.message.contains("the archive stays at schema 9, migrated that far"), "\(e.message)")
        }
        try queue.close()
        #expect(try ArchiveFixtureV8.schemaVersion(t.home.archivePath) == 9)
    }
}
