import Dispatch
import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeTestSupport

@Suite("Pipelined capture transactions")
struct PipelineTransactionTests {
    /// Holds the archive's writer until `release()`, so that submitted chunks queue up
    /// and the next transaction finds all of them waiting.
    final class WriterHold: @unchecked Sendable {
        private let acquired = DispatchSemaphore(value: 0)
        private let held = DispatchSemaphore(value: 0)
        private let done = DispatchSemaphore(value: 0)

        init(_ archive: Archive) {
            let writer = archive.writer
            DispatchQueue.global().async { [acquired, held, done] in
                try? writer.write { _ in
                    acquired.signal()
                    held.wait()
                }
                done.signal()
            }
            acquired.wait()
        }

        func release() {
            held.signal()
            done.wait()
        }
    }

    static func waitFor(_ pipeline: PipelinedPageWriter, chunks: Int) throws {
        let deadline = Date().addingTimeInterval(30)
        while pipeline.chunksWaiting < chunks {
            guard Date() < deadline else { throw ArchiveError(.invalidState, "chunks were not normalized in time") }
            usleep(1000)
        }
    }

    @Test("chunks waiting together commit as pages of up to the transaction bound, hashed like a single page")
    func grouping() throws {
        let t = TempHome()
        let node = try t.open()
        let samples = (0..<30).map { hr($0) }
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual))
        let run = try session.beginTypeRun(heartRate, kind: .fullScan)
        let pipeline = PipelinedPageWriter(session: session, maxInFlight: 10, transactionSamples: 7)
        let hold = WriterHold(node.archive)
        for c in 0..<10 { try pipeline.submit(Array(samples[(c * 3)..<(c * 3 + 3)]), to: run) }
        try Self.waitFor(pipeline, chunks: 10)
        hold.release()
        let totals = try pipeline.flush()
        #expect(totals.appeared == 30)
        // A transaction goes on while fewer than 7 samples are in it: 9, 9, 9, then the last 3.
        #expect(pipeline.transactionsCommitted == 4)
        let pages = try node.archive.writer.read { db in
            try Row.fetchAll(db, sql: "SELECT page_index, record_count, page_hash FROM capture_pages WHERE type_run_id = ? ORDER BY page_index", arguments: [run.runID])
        }
        #expect(pages.map { $0["page_index"] as Int } == [0, 1, 2, 3])
        #expect(pages.map { $0["record_count"] as Int } == [9, 9, 9, 3])
        // A page's hash is the hash a single writePage of its samples records.
        let normalizer = SampleNormalizer(hasher: node.hasher)
        var h = SHA256Stream(domain: .page)
        TypeRunWriter.hashPage(try samples[0..<9].map { try normalizer.normalize($0, typeIdentifier: heartRate.identifier) }, into: &h)
        #expect(pages[0]["page_hash"] as String == h.finalize())
        #expect(run.nextPageIndex == 4)
        let result = try run.complete()
        #expect(result.insertedEvents == 30)
        #expect(result.visibleCount == 30)
        try session.finish()
        // The same samples written page by page afterwards: nothing changed.
        t.clock.advance(3600)
        let before = try Counts.of(node)
        let (obs, r) = try capture(node, samples: samples)
        #expect(try events(node, observation: obs).isEmpty)
        #expect(r.visibleCount == 30)
        #expect(try Counts.of(node) == before)
    }

    @Test("a failure rolls back its whole transaction, keeps earlier ones, and forgets the ids cached in it")
    func failureRollsBackTheTransaction() throws {
        let t = TempHome()
        let node = try t.open()
        try node.archive.writer.write { db in
            try db.execute(sql: """
                CREATE TRIGGER test_fail BEFORE INSERT ON sample_versions WHEN NEW.numeric_value = 666
                BEGIN SELECT RAISE(ABORT, 'refused by the test'); END
                """)
        }
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual))
        let run = try session.beginTypeRun(heartRate, kind: .fullScan)
        // One committed transaction first.
        let first = PipelinedPageWriter(session: session, transactionSamples: 100)
        try first.submit((0..<5).map { hr($0) }, to: run)
        try first.flush()
        #expect(first.transactionsCommitted == 1)
        let committed = try Counts.of(node)
        #expect(committed.samples == 5)

        // Then chunk A (a source the archive has not seen) and chunk B (refused) in one transaction.
        func newSource(_ s: CapturedSample) -> CapturedSample {
            var s = s
            s.source = SourceDescriptor(name: "Other Watch", bundleIdentifier: "com.example.other", productType: "Watch7,1", version: "11.0", operatingSystemVersion: "11.0")
            return s
        }
        let a = (5..<8).map { newSource(hr($0)) }
        let b = [hr(8), hr(9, value: 666)]
        let pipeline = PipelinedPageWriter(session: session, maxInFlight: 4, transactionSamples: 100)
        let hold = WriterHold(node.archive)
        try pipeline.submit(a, to: run)
        try pipeline.submit(b, to: run)
        try Self.waitFor(pipeline, chunks: 2)
        hold.release()
        #expect(throws: DatabaseError.self) { try pipeline.flush() }
        #expect(pipeline.transactionsCommitted == 0)
        #expect(throws: DatabaseError.self) { try pipeline.submit([hr(10)], to: run) }
        // Nothing of A or B; the first transaction stays.
        #expect(try Counts.of(node) == committed)
        let sources = try node.archive.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM source_revisions")! }
        #expect(sources == 1)

        // The ids cached while A was applied were rolled back with it: writing A again
        // must insert its source afresh (a stale id would break the foreign key).
        try node.archive.writer.write { db in try db.execute(sql: "DROP TRIGGER test_fail") }
        let again = try run.writePage(index: 1, samples: a)
        #expect(again.appeared == 3)
        let check = try node.archive.writer.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM source_revisions")!,
             try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count)
        }
        #expect(check.0 == 2)
        #expect(check.1 == 0)
        _ = try run.complete()
        try session.finish()
    }

    @Test("the heap is trimmed each time a transaction bound's worth of samples was written, not after every transaction")
    func trimsHeapByWrittenSamples() throws {
        let t = TempHome()
        let node = try t.open()
        let trims = PipelineStageTests.Counter()
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual))
        let run = try session.beginTypeRun(heartRate, kind: .fullScan)
        let pipeline = PipelinedPageWriter(session: session, maxInFlight: 10, transactionSamples: 4, trimHeap: { trims.add(1) })
        let hold = WriterHold(node.archive)
        for c in 0..<5 { try pipeline.submit((c * 3..<c * 3 + 3).map { hr($0) }, to: run) }
        try Self.waitFor(pipeline, chunks: 5)
        hold.release()
        #expect(try pipeline.flush().appeared == 15)
        // Transactions of 6, 6 and 3 samples: a trim after each of the first two (6 >= 4), none after the last.
        #expect(pipeline.transactionsCommitted == 3)
        #expect(trims.current == 2)
        // Three samples more reach the bound again (3 + 3): one more trim.
        try pipeline.submit((15..<18).map { hr($0) }, to: run)
        try pipeline.flush()
        #expect(trims.current == 3)
        _ = try run.complete()
        try session.finish()
    }

    @Test("a released pipeline holds nothing of its session")
    func releasesTheSession() throws {
        let t = TempHome()
        let node = try t.open()
        weak var normalizer: SampleNormalizer?
        do {
            let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual))
            normalizer = session.normalizer
            let run = try session.beginTypeRun(heartRate, kind: .fullScan)
            let pipeline = PipelinedPageWriter(session: session, maxInFlight: 2, transactionSamples: 4)
            for c in 0..<5 { try pipeline.submit((c * 3..<c * 3 + 3).map { hr($0) }, to: run) }
            #expect(try pipeline.flush().appeared == 15)
            _ = try run.complete()
            try session.finish()
        }
        // Nothing queued on the pipeline's stages still holds the session's normalizer.
        for _ in 0..<400 where normalizer != nil { Thread.sleep(forTimeInterval: 0.005) }
        #expect(normalizer == nil)
    }
}
