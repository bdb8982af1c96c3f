import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeSimulator
import HealthProbeTestSupport

/// A first capture builds the sample tables' lookup indexes once its records are in
/// (docs/decisions/2026-11-25-bulk-first-import.md): the same archive, in fewer pages.
@Suite("First capture with deferred indexes")
struct FirstCaptureIndexTests {
    @Test("the same rows, digests and indexes as a capture that keeps its indexes row by row, in fewer pages; later captures defer nothing")
    func sameArchiveFewerPages() throws {
        // Two copies of one new home: the same keys, so the same fingerprints and digests.
        let homes = [TempHome(), TempHome()]
        _ = try homes[0].open()
        try FileManager.default.copyItem(atPath: homes[0].root, toPath: homes[1].root)
        var seen: [(rows: [String], indexes: [String], digests: [String], pages: Int)] = []
        for (t, deferred) in zip(homes, [true, false]) {
            var o = SimulatorCapture.Options()
            o.seed = 11
            o.deferIndexes = deferred
            o.days = 40
            _ = try SimulatorCapture.run(home: t.home, options: o)
            let pages = try t.open().archive.writer.writeWithoutTransaction { db in
                try db.checkpoint(.truncate)
                return try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            }
            o.days = 2
            _ = try SimulatorCapture.run(home: t.home, options: o)
            let (pending, check, rows, indexes, digests) = try t.open().archive.writer.read { db in
                (try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM archive_metadata WHERE key = ?)", arguments: [DeferredIndexes.pendingKey]) ?? true,
                 try String.fetchAll(db, sql: "PRAGMA integrity_check"),
                 try sampleTableRows(db),
                 try String.fetchAll(db, sql: "SELECT name || ': ' || ifnull(sql, '') FROM sqlite_schema WHERE type = 'index' ORDER BY name"),
                 try [Int64(1), 2].map { try ChainStateDigest.compute(db, observationID: $0).digest })
            }
            #expect(!pending && check == ["ok"])
            seen.append((rows, indexes, digests, pages))
        }
        #expect(seen[0].rows == seen[1].rows && seen[0].rows.count > 4000)
        #expect(seen[0].indexes == seen[1].indexes)
        #expect(seen[0].digests == seen[1].digests)
        #expect(seen[0].pages < seen[1].pages, "deferred \(seen[0].pages) pages, row by row \(seen[1].pages)")
    }

    @Test("a first capture that is reverted builds the indexes again and leaves no sample")
    func revertedFirstCapture() throws {
        let t = TempHome()
        let node = try t.open()
        let before = try node.archive.writer.read { try String.fetchAll($0, sql: "SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name") }
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .benchmark))
        #expect(session.indexesDeferred)
        let run = try session.beginTypeRun(SimulatedType.all[0].descriptor, kind: .fullScan)
        var person = SimulatedPerson(seed: 3)
        var page: [CapturedSample] = []
        try person.visible(SimulatedType.all[0], at: 5) { page.append($0) }
        try run.writePage(index: 0, samples: page)
        #expect(!page.isEmpty)
        try session.revert(reason: "test")
        let (after, samples) = try node.archive.writer.read { db in
            (try String.fetchAll(db, sql: "SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name"), try Int.fetchOne(db, sql: "SELECT count(*) FROM samples"))
        }
        #expect(after == before && samples == 0)
        #expect(!session.indexesDeferred)
    }
}
