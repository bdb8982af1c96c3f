import Dispatch
import Foundation
import GRDB
import HealthProbeCanonical

/// Writes the samples of one or more type runs of a capture through a
/// three-stage pipeline: the caller submits chunks (parsing, generating), one
/// `ConsumerStage` normalizes and hashes them, another writes them to SQLite in
/// submission order. Memory stays bounded: at most `maxInFlight` normalized chunks
/// wait for the write stage, plus one in each stage and one waiting to be normalized.
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
/// `@unchecked Sendable`: its stored properties are immutable, or guarded by
/// `Shared`'s lock, or used on the write stage only (the session's caches).
public final class PipelinedPageWriter: @unchecked Sendable {
    /// The default bound on the samples of one transaction. Fewer, larger commits
    /// write the random UUID-hash index's leaves to the WAL fewer times.
    public static let defaultTransactionSamples = 50_000

    private let normalize: ConsumerStage<Chunk<CapturedSample>>
    private let write: ConsumerStage<Chunk<NormalizedSample>>
    private let shared = Shared()

    /// A chunk of one run's samples, on its way through the stages.
    private struct Chunk<Sample> {
        let run: TypeRunWriter
        let samples: [Sample]
    }

    /// State the write stage shares with the caller (guarded by its lock).
    private final class Shared: @unchecked Sendable {
        let lock = NSLock()
        var totals = PageResult()
        var transactions = 0
        /// Chunks normalized and not yet applied by the write stage.
        var waiting = 0
    }

    /// The session's normalizer (the pipeline does not keep the session, and so the
    /// archive, alive: its runs reach it, unowned).
    private final class NormalizerRef: @unchecked Sendable {
        let normalizer: SampleNormalizer
        init(_ n: SampleNormalizer) { normalizer = n }
    }

    /// `transactionSamples` bounds the samples one transaction applies (at least one chunk).
    public init(session: CaptureSession, maxInFlight: Int = 3, transactionSamples: Int = PipelinedPageWriter.defaultTransactionSamples) {
        let shared = self.shared
        let limit = max(transactionSamples, 1)
        let write = ConsumerStage<Chunk<NormalizedSample>>(name: "healthprobe.capture.write", depth: max(maxInFlight, 1)) { first, waiting in
            try Self.transaction(first, waiting, limit: limit, shared: shared)
        }
        let normalizer = NormalizerRef(session.normalizer)
        normalize = ConsumerStage(name: "healthprobe.capture.normalize", depth: 1) { chunk, _ in
            let type = chunk.run.type.identifier
            var out: [NormalizedSample] = []
            out.reserveCapacity(chunk.samples.count)
            for s in chunk.samples { out.append(try normalizer.normalizer.normalize(s, typeIdentifier: type)) }
            shared.lock.withLock { shared.waiting += 1 }
            do { try write.submit(Chunk(run: chunk.run, samples: out)) } catch {
                shared.lock.withLock { shared.waiting -= 1 }
                throw error
            }
        }
        self.write = write
    }

    /// A writer for a single run.
    public convenience init(run: TypeRunWriter, transactionSamples: Int = PipelinedPageWriter.defaultTransactionSamples) {
        self.init(session: run.session, transactionSamples: transactionSamples)
    }

    /// Totals over the transactions committed so far (complete after `flush`).
    public var totals: PageResult { shared.lock.withLock { shared.totals } }

    /// Transactions committed so far.
    public var transactionsCommitted: Int { shared.lock.withLock { shared.transactions } }

    /// Chunks normalized and waiting for the write stage (tests).
    var chunksWaiting: Int { shared.lock.withLock { shared.waiting } }

    /// Queues a chunk of `run`; blocks while the stages are full.
    public func submit(_ samples: [CapturedSample], to run: TypeRunWriter) throws {
        if let e = write.failure { throw e }
        try run.ensureOpen()
        try normalize.submit(Chunk(run: run, samples: samples))
    }

    /// Waits for every queued chunk; throws the first error, if any.
    @discardableResult
    public func flush() throws -> PageResult {
        // Both stages idle, even after a failure: the caller may revert what was written.
        let normalizeError: (any Error)?
        do { try normalize.flush(); normalizeError = nil } catch { normalizeError = error }
        try write.flush()
        if let normalizeError { throw normalizeError }
        return totals
    }

    deinit {
        normalize.cancel()
        write.cancel()
    }

    /// One transaction: `first`, and the chunks that are waiting while it applies
    /// them, up to `limit` samples. On the write stage.
    private static func transaction(_ first: Chunk<NormalizedSample>, _ waiting: () -> Chunk<NormalizedSample>?,
                                    limit: Int, shared: Shared) throws {
        let session = first.run.session
        let saved = session.caches
        var pages = TransactionPages()
        var taken = 0
        defer { shared.lock.withLock { shared.waiting -= taken } }
        do {
            try session.archive.writer.write { db in
                var chunk: Chunk<NormalizedSample>? = first
                while let c = chunk {
                    taken += 1
                    try pages.apply(c.run, c.samples, db)
                    chunk = pages.samples < limit ? waiting() : nil
                }
                try pages.finish(db)
            }
        } catch {
            session.caches = saved
            throw error
        }
        session.caches.trim()
        pages.publish()
        shared.lock.withLock {
            shared.transactions += 1
            for p in pages.byRun { shared.totals.add(p.result) }
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
            for n in normalized { try ops.apply(n, into: &byRun[i].result) }
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
