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
        var seen: [(contents: ArchiveContents, pages: Int)] = []
        for (t, deferred) in zip(try twinHomes(), [true, false]) {
            var o = SimulatorCapture.Options()
            o.seed = 11
            o.deferIndexes = deferred
            o.days = 40
            _ = try SimulatorCapture.run(home: t.home, options: o)
            let pages = try checkpointedPages(try t.open())
            o.days = 2
            _ = try SimulatorCapture.run(home: t.home, options: o)
            let (pending, contents) = try t.open().archive.writer.read { db in
                (try DeferredIndexes.pendingRecord(db) != nil, try ArchiveContents(db, observations: [1, 2]))
            }
            #expect(!pending && contents.integrity == ["ok"])
            seen.append((contents, pages))
        }
        #expect(seen[0].contents == seen[1].contents && seen[0].contents.rows.count > 4000)
        #expect(seen[0].pages < seen[1].pages, "deferred \(seen[0].pages) pages, row by row \(seen[1].pages)")
    }

    @Test("a first capture that is reverted builds the indexes again and leaves no sample")
    func revertedFirstCapture() throws {
        let t = TempHome()
        let node = try t.open()
        let before = try node.archive.writer.read(archiveIndexes)
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .benchmark))
        #expect(session.indexesDeferred)
        let run = try session.beginTypeRun(SimulatedType.all[0].descriptor, kind: .fullScan)
        let person = SimulatedPerson(seed: 3)
        var page: [CapturedSample] = []
        try person.visible(SimulatedType.all[0], at: 5) { page.append($0) }
        try run.writePage(index: 0, samples: page)
        #expect(!page.isEmpty)
        try session.revert(reason: "test")
        let (after, samples) = try node.archive.writer.read { db in
            (try archiveIndexes(db), try Int.fetchOne(db, sql: "SELECT count(*) FROM samples"))
        }
        #expect(after == before && samples == 0)
        #expect(!session.indexesDeferred)
    }
}
