import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeImport
@testable import HealthProbeSimulator
import HealthProbeTestSupport

/// A first import builds the sample tables' lookup indexes once its records are in
/// (docs/decisions/2026-11-25-bulk-first-import.md): the same archive, in fewer pages.
@Suite("First import with deferred indexes")
struct BulkFirstImportTests {
    static func pending(_ db: Database) throws -> Bool { try DeferredIndexes.pendingRecord(db) != nil }

    @Test("the same rows, digests and indexes as an import that keeps its indexes row by row, in fewer pages; a re-import keeps its indexes")
    func sameArchiveFewerPages() throws {
        let dir = TempDir()
        var e = SyntheticExport(records: 6000)
        e.compositeEvery = 500
        try e.writeXML(to: dir.file("a.xml"))
        e.editEvery = 700
        e.added = 20
        try e.writeXML(to: dir.file("b.xml"))
        var seen: [(contents: ArchiveContents, pages: Int)] = []
        for (t, deferred) in zip(try twinHomes(), [true, false]) {
            let first = try importExport(t, dir.file("a.xml"), pageSize: 700, deferIndexes: deferred)
            #expect(first.status == "completed" && first.appeared == first.records)
            let pages = try checkpointedPages(try t.open())
            // The second import finds samples: nothing is deferred, and the indexes serve its edit matching.
            let second = try importExport(t, dir.file("b.xml"), pageSize: 700, deferIndexes: deferred)
            #expect(second.changed > 0 && second.appeared == 20)
            let (pending, contents) = try t.open().archive.writer.read { db in (try Self.pending(db), try ArchiveContents(db, observations: [1, 2])) }
            #expect(!pending && contents.integrity == ["ok"])
            seen.append((contents, pages))
        }
        #expect(seen[0].contents == seen[1].contents && seen[0].contents.rows.count > 24_000)
        #expect(seen[0].pages < seen[1].pages, "deferred \(seen[0].pages) pages, row by row \(seen[1].pages)")
    }

    @Test("a first import that fails builds the indexes again and leaves an empty archive")
    func failedFirstImport() throws {
        let dir = TempDir()
        try SyntheticExport(records: 3000).writeXML(to: dir.file("export.xml"))
        let xml = try Data(contentsOf: URL(fileURLWithPath: dir.file("export.xml")))
        try xml.prefix(xml.count * 2 / 3).write(to: URL(fileURLWithPath: dir.file("truncated.xml")))
        let t = TempHome()
        let before = try t.open().archive.writer.read(archiveIndexes)
        #expect(throws: ImportError.self) { try importExport(t, dir.file("truncated.xml"), pageSize: 500) }
        let (after, pending, samples) = try t.open().archive.writer.read { db in
            (try archiveIndexes(db), try Self.pending(db), try Int.fetchOne(db, sql: "SELECT count(*) FROM samples"))
        }
        #expect(after == before && !pending && samples == 0)
    }

    @Test("indexes a crash left deferred are built by the next writable open; an archive with samples defers nothing")
    func crashBetweenDropAndBuild() throws {
        let t = TempHome()
        var node: NodeArchive? = try t.open()
        let (before, deferrable) = try node!.archive.writer.read { db in
            (try archiveIndexes(db), try Int.fetchOne(db, sql: """
                SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL AND name != 'idx_samples_uuid_hash'
                  AND sql NOT LIKE 'CREATE UNIQUE %' AND tbl_name IN ('samples', 'sample_versions', 'sample_observation_events', 'sample_visibility_ranges')
                """) ?? 0)
        }
        #expect(deferrable >= 5)
        #expect(try node!.archive.deferIndexesForFirstLoad(keeping: ["idx_samples_uuid_hash"]))
        let during = try node!.archive.writer.read(archiveIndexes)
        #expect(during.count == before.count - deferrable, "\(during)")
        #expect(during.contains { $0.hasPrefix("idx_samples_uuid_hash:") })
        // A UNIQUE index is a constraint, and the lookups before each insert use it: never deferred.
        #expect(during.contains { $0.hasPrefix("idx_sample_versions_payload:") })
        #expect(throws: ArchiveError.self) { try node!.archive.deferIndexesForFirstLoad(keeping: []) }
        node = nil  // the process ends here
        let (after, pending) = try t.open().archive.writer.read { db in (try archiveIndexes(db), try Self.pending(db)) }
        #expect(after == before && !pending)
        try t.simulate(seed: 3, days: [1])
        let withSamples = try t.open()
        #expect(!(try withSamples.archive.deferIndexesForFirstLoad(keeping: [])))
        #expect(try withSamples.archive.writer.read(archiveIndexes) == before)
    }

    @Test("a pending record that is not CREATE INDEX statements, one each, stops the open with an error and runs nothing", arguments: [
        "[\"DROP TABLE samples\"]", "not json", "{}",
        "[\"CREATE INDEX x ON samples(fuzzy_key); DROP TABLE samples\"]",
    ])
    func damagedRecord(_ value: String) throws {
        let t = TempHome()
        try t.open().archive.writer.write { db in
            try db.execute(sql: "INSERT INTO archive_metadata(key, value) VALUES (?, ?)", arguments: [DeferredIndexes.pendingKey, value])
        }
        #expect { _ = try t.open() } throws: { e in
            (e as? ArchiveError)?.message.contains("archive_metadata.\(DeferredIndexes.pendingKey) is not a list") == true
        }
        let (samples, x) = try DatabaseQueue(path: t.home.archivePath).read { db in
            (try db.tableExists("samples"), try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM sqlite_schema WHERE name = 'x'") ?? true)
        }
        #expect(samples && !x)
    }
}
