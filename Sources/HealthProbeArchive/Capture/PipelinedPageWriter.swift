import Foundation
import GRDB
import HealthProbeCanonical
import Synchronization

/// Writes the samples of one or more type runs of a capture through a
/// three-stage pipeline: the caller submits chunks (parsing, generating), one
/// `ConsumerStage` normalizes and hashes them, another writes them to SQLite in
/// submission order. At most `maxInFlight` chunks are held (memory stays bounded).
///
/// The write stage turns chunks into pages: it opens a transaction, applies the
/// chunk, and goes on with the next chunk only while one is already normalized
/// and waiting, up to `transactionSamples` samples; then it commits. Each run's
/// share of a transaction is one page, recorded in `capture_pages` with its hash
/// (docs/decisions/2026-11-24-capture-transactions.md). A transaction never waits
/// for the caller, so the caller may write to the archive between submissions.
///
/// The first error stops the pipeline and is thrown by the next `submit` or by
/// `flush`; the transaction it happened in is rolled back whole, earlier ones
/// stay. Call from one thread; while a pipeline is active, do not call a run's
/// `writePage` directly or complete its runs before `flush()` returns.
public final class PipelinedPageWriter {
    /// The default bound on the samples of one transaction. Fewer, larger commits
    /// write the random UUID-hash index's leaves to the WAL fewer times.
    public static let defaultTransactionSamples = 50_000

    private let shared: Shared
    /// The session's normalizer (the pipeline does not keep the session, and so the
    /// archive, alive: its runs reach it, unowned).
    private let normalizer: SampleNormalizer
    private let maxInFlight: Int
    private let transactionSamples: Int
    /// Trims the heap once `transactionSamples` samples were written since the last trim:
    /// the chunks are made on the normalizing stage's thread and freed on the writing
    /// one, each thread allocating in a glibc arena of its own, and each arena would
    /// otherwise keep what the chunks freed in it
    /// (docs/decisions/2026-11-25-heap-arenas.md, amended 2026-11-28).
    private let trimHeap: @Sendable () -> Void
    /// The two stages while chunks are in flight: started by the first `submit`, ended
    /// by `flush` (the caller's thread only).
    private var stages: Stages?

    private struct Stages {
        let normalize: ConsumerStage<Submitted>
        let write: ConsumerStage<Chunk>
    }

    /// A chunk as submitted, waiting for the normalizing stage.
    private struct Submitted {
        let run: TypeRunWriter
        let type: String
        let samples: [CapturedSample]
    }

    /// A normalized chunk waiting for the write stage.
    private struct Chunk {
        let run: TypeRunWriter
        let samples: [NormalizedSample]
    }

    /// What the caller and both stages share.
    private final class Shared: Sendable {
        let failure = FirstError()
        /// One element for each chunk submitted and not yet written: `submit` waits
        /// while `maxInFlight` are held; the write stage releases each after applying it.
        let held: BoundedQueue<Void>
        let counts = Mutex(Counts())

        struct Counts {
            var totals = PageResult()
            var transactions = 0
            /// Chunks normalized and not yet applied.
            var ready = 0
            /// Samples written since the heap was last trimmed.
            var sinceTrim = 0
        }

        init(maxInFlight: Int) { held = BoundedQueue(capacity: maxInFlight) }

        var failed: Bool { failure.error != nil }

        /// Records the first error; a `submit` waiting for room throws it.
        func fail(_ error: any Error) {
            if failure.record(error) { held.cancel(error) }
        }

        /// A held chunk was written or dropped.
        func release() { _ = held.poll() }
    }

    /// `transactionSamples` bounds the samples one transaction applies (at least one chunk).
    public convenience init(session: CaptureSession, maxInFlight: Int = 3, transactionSamples: Int = PipelinedPageWriter.defaultTransactionSamples) {
        self.init(session: session, maxInFlight: maxInFlight, transactionSamples: transactionSamples, trimHeap: Heap.trim)
    }

    /// `trimHeap` hands the allocator's free memory back (tests inject a counter).
    init(session: CaptureSession, maxInFlight: Int, transactionSamples: Int, trimHeap: @escaping @Sendable () -> Void) {
        normalizer = session.normalizer
        self.maxInFlight = max(maxInFlight, 1)
        shared = Shared(maxInFlight: self.maxInFlight)
        self.transactionSamples = max(transactionSamples, 1)
        self.trimHeap = trimHeap
    }

    /// A writer for a single run.
    public convenience init(run: TypeRunWriter, transactionSamples: Int = PipelinedPageWriter.defaultTransactionSamples) {
        self.init(session: run.session, transactionSamples: transactionSamples)
    }

    /// Totals over the transactions committed so far (complete after `flush`).
    public var totals: PageResult { shared.counts.withLock { $0.totals } }

    /// Transactions committed so far.
    public var transactionsCommitted: Int { shared.counts.withLock { $0.transactions } }

    /// Chunks normalized and waiting for the write stage (tests).
    var chunksWaiting: Int { shared.counts.withLock { $0.ready } }

    /// Queues a chunk of `run`; blocks while `maxInFlight` chunks are held.
    public func submit(_ samples: [CapturedSample], to run: TypeRunWriter) throws {
        try shared.failure.check()
        try run.ensureOpen()
        try shared.held.put(())
        let stages = self.stages ?? start()
        do {
            try stages.normalize.submit(Submitted(run: run, type: run.type.identifier, samples: samples))
        } catch {
            shared.fail(error)
            throw error
        }
    }

    /// Waits for every queued chunk; throws the first error, if any.
    @discardableResult
    public func flush() throws -> PageResult {
        if let stages {
            // Their threads end: nothing they used (the session, and so the archive)
            // is held by them once `flush` returns.
            self.stages = nil
            do { try stages.normalize.finish() } catch { shared.fail(error) }
            do { try stages.write.finish() } catch { shared.fail(error) }
        }
        try shared.failure.check()
        return totals
    }

    /// Starts the two stages (`stages` stays set until `flush`).
    private func start() -> Stages {
        let shared = self.shared, normalizer = self.normalizer
        let write = ConsumerStage<Chunk>(name: "healthprobe.capture.write", depth: maxInFlight,
                                         batches: Self.transactions(shared, transactionSamples: transactionSamples, trimHeap: trimHeap))
        let normalize = ConsumerStage<Submitted>(name: "healthprobe.capture.normalize", depth: maxInFlight) { chunk in
            guard !shared.failed else { shared.release(); return }
            var out: [NormalizedSample] = []
            out.reserveCapacity(chunk.samples.count)
            do {
                for s in chunk.samples { out.append(try normalizer.normalize(s, typeIdentifier: chunk.type)) }
            } catch {
                shared.fail(error)
                shared.release()
                return
            }
            shared.counts.withLock { $0.ready += 1 }
            try write.submit(Chunk(run: chunk.run, samples: out))
        }
        let stages = Stages(normalize: normalize, write: write)
        self.stages = stages
        return stages
    }

    /// The write stage's body: one transaction of the chunk it is given and those
    /// that become ready while it applies them, up to `transactionSamples`.
    private static func transactions(_ shared: Shared, transactionSamples: Int, trimHeap: @escaping @Sendable () -> Void) -> (Chunk, () -> Chunk?) -> Void {
        { first, more in
            var next: Chunk? = first
            if shared.failed {
                while next != nil {
                    shared.counts.withLock { $0.ready -= 1 }
                    shared.release()
                    next = more()
                }
                return
            }
            let session = first.run.session
            var taken = 0, released = 0
            defer { for _ in released..<taken { shared.release() } }
            let saved = session.caches
            var pages = TransactionPages()
            do {
                try session.archive.writer.write { db in
                    while let chunk = next {
                        next = nil
                        shared.counts.withLock { $0.ready -= 1 }
                        taken += 1
                        try pages.apply(chunk.run, chunk.samples, db)
                        shared.release()
                        released += 1
                        if pages.samples < transactionSamples { next = more() }
                    }
                    try pages.finish(db)
                }
            } catch {
                if next != nil {  // the transaction did not begin
                    shared.counts.withLock { $0.ready -= 1 }
                    taken += 1
                }
                session.caches = saved
                // What these runs summed as they wrote was rolled back.
                for p in pages.byRun { p.run.visible = nil }
                shared.fail(error)
                return
            }
            session.caches.trim()
            pages.publish()
            let trim = shared.counts.withLock { counts in
                counts.transactions += 1
                for p in pages.byRun { counts.totals.add(p.result) }
                counts.sinceTrim += pages.samples
                guard counts.sinceTrim >= transactionSamples else { return false }
                counts.sinceTrim = 0
                return true
            }
            if trim { trimHeap() }
        }
    }

    /// What one transaction wrote, per run: each run's share is one page.
    private struct TransactionPages {
        struct Page {
            let run: TypeRunWriter
            var hasher = SHA256Stream(domain: .page)
            var result = PageResult()
            var index = 0
        }
        var byRun: [Page] = []
        var samples = 0

        mutating func apply(_ run: TypeRunWriter, _ normalized: [NormalizedSample], _ db: Database) throws {
            try run.ensureOpen()
            let i: Int
            if let found = byRun.firstIndex(where: { $0.run === run }) { i = found } else { byRun.append(Page(run: run)); i = byRun.count - 1 }
            TypeRunWriter.hashPage(normalized, into: &byRun[i].hasher)
            var ops = try PageOperations(db, run: run)
            try ops.applyAll(normalized, into: &byRun[i].result)
            samples += normalized.count
        }

        /// Records each run's page in the ledger, inside the transaction.
        mutating func finish(_ db: Database) throws {
            for i in byRun.indices {
                let run = byRun[i].run
                let index = run.nextPageIndex
                if try run.committedPageHash(db, index: index) != nil {
                    throw ArchiveError(.pageConflict, "page \(index) of the \(run.type.identifier) run was already committed; a pipeline numbers its pages itself, so do not mix it with writePage on the same run")
                }
                byRun[i].index = index
                try run.finishPage(db, index: index, hash: byRun[i].hasher.finalize(), result: byRun[i].result)
            }
        }

        /// After the commit: the runs' page numbers and totals move on.
        func publish() {
            for p in byRun {
                p.run.nextPageIndex = p.index + 1
                p.run.add(p.result)
            }
        }
    }
}
