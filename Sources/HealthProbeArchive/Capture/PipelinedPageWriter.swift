import Dispatch
import Foundation
import GRDB
import HealthProbeCanonical

/// Writes the samples of one or more type runs of a capture through a
/// three-stage pipeline: the caller submits chunks (parsing, generating), one
/// serial queue normalizes and hashes them, another writes them to SQLite in
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
/// `@unchecked Sendable`: its stored properties are immutable, or guarded by
/// `Shared`'s lock, or used on the write queue only (the session's caches).
public final class PipelinedPageWriter: @unchecked Sendable {
    /// The default bound on the samples of one transaction. Fewer, larger commits
    /// write the random UUID-hash index's leaves to the WAL fewer times.
    public static let defaultTransactionSamples = 50_000

    private let normalizeQueue = DispatchQueue(label: "healthprobe.capture.normalize")
    private let writeQueue = DispatchQueue(label: "healthprobe.capture.write")
    private let slots: DispatchSemaphore
    private let group = DispatchGroup()
    private let shared = Shared()
    /// The session's normalizer (the pipeline does not keep the session, and so the
    /// archive, alive: its runs reach it, unowned).
    private let normalizer: NormalizerRef
    private let transactionSamples: Int
    /// Trims the heap once `transactionSamples` samples were written since the last trim:
    /// the write queue's work moves between threads, and so between glibc's arenas, and
    /// each arena would otherwise keep what the chunks freed in it
    /// (docs/decisions/2026-11-25-heap-arenas.md, amended 2026-11-28).
    private let trimHeap: @Sendable () -> Void
    /// Samples written since the heap was last trimmed (the write queue only).
    private var sinceTrim = 0

    /// A normalized chunk waiting for the write stage.
    private struct Chunk {
        let run: TypeRunWriter
        let samples: [NormalizedSample]
    }

    /// State shared with the queues (guarded by its lock).
    private final class Shared: @unchecked Sendable {
        let lock = NSLock()
        var error: (any Error)?
        var totals = PageResult()
        var ready: [Chunk] = []
        var transactions = 0
        var failed: Bool { lock.withLock { error != nil } }
        func fail(_ e: any Error) { lock.withLock { if error == nil { error = e } } }
        func push(_ c: Chunk) { lock.withLock { ready.append(c) } }
        func pop() -> Chunk? { lock.withLock { ready.isEmpty ? nil : ready.removeFirst() } }
        /// The session of the next waiting chunk, if any.
        func nextSession() -> CaptureSession? { lock.withLock { ready.first?.run.session } }
        var readyCount: Int { lock.withLock { ready.count } }
    }

    /// `@unchecked Sendable`: immutable (one `let`).
    private final class NormalizerRef: @unchecked Sendable {
        let normalizer: SampleNormalizer
        init(_ n: SampleNormalizer) { normalizer = n }
    }

    /// `transactionSamples` bounds the samples one transaction applies (at least one chunk).
    public convenience init(session: CaptureSession, maxInFlight: Int = 3, transactionSamples: Int = PipelinedPageWriter.defaultTransactionSamples) {
        self.init(session: session, maxInFlight: maxInFlight, transactionSamples: transactionSamples, trimHeap: Heap.trim)
    }

    /// `trimHeap` hands the allocator's free memory back (tests inject a counter).
    init(session: CaptureSession, maxInFlight: Int, transactionSamples: Int, trimHeap: @escaping @Sendable () -> Void) {
        normalizer = NormalizerRef(session.normalizer)
        slots = DispatchSemaphore(value: max(maxInFlight, 1))
        self.transactionSamples = max(transactionSamples, 1)
        self.trimHeap = trimHeap
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
    var chunksWaiting: Int { shared.readyCount }

    /// Queues a chunk of `run`; blocks while `maxInFlight` chunks are held.
    public func submit(_ samples: [CapturedSample], to run: TypeRunWriter) throws {
        if let e = shared.lock.withLock({ shared.error }) { throw e }
        try run.ensureOpen()
        slots.wait()
        let state = shared, slots = self.slots, group = self.group, writeQueue = self.writeQueue
        let norm = normalizer, chunkRun = UncheckedBox(run)
        let type = run.type.identifier
        group.enter()
        normalizeQueue.async {
            guard !state.failed else { slots.signal(); group.leave(); return }
            var out: [NormalizedSample] = []
            out.reserveCapacity(samples.count)
            do {
                for s in samples { out.append(try norm.normalizer.normalize(s, typeIdentifier: type)) }
            } catch {
                state.fail(error)
                slots.signal()
                group.leave()
                return
            }
            state.push(Chunk(run: chunkRun.value, samples: out))
            writeQueue.async {
                // Left only once `drain` returned: nothing it used (the session, and so the
                // archive) is still held when `flush` returns.
                let taken = self.drain()
                for _ in 0..<taken { group.leave() }
            }
        }
    }

    /// Waits for every queued chunk; throws the first error, if any.
    @discardableResult
    public func flush() throws -> PageResult {
        group.wait()
        if let e = shared.lock.withLock({ shared.error }) { throw e }
        return totals
    }

    /// One transaction: the chunks waiting now, and those that become ready
    /// while it applies them, up to `transactionSamples`. On the write queue.
    /// Returns how many chunks it took (the caller leaves the group for each).
    private func drain() -> Int {
        guard let session = shared.nextSession() else { return 0 }  // an earlier transaction took it
        var taken = 0, released = 0
        defer { for _ in released..<taken { slots.signal() } }
        if shared.failed {
            while shared.pop() != nil { taken += 1 }
            return taken
        }
        let saved = session.caches
        var pages = TransactionPages()
        do {
            try session.archive.writer.write { db in
                while pages.samples < transactionSamples, let chunk = shared.pop() {
                    taken += 1
                    try pages.apply(chunk.run, chunk.samples, db)
                    slots.signal()
                    released += 1
                }
                try pages.finish(db)
            }
        } catch {
            session.caches = saved
            // What these runs summed as they wrote was rolled back.
            for p in pages.byRun { p.run.visible = nil }
            shared.fail(error)
            return taken
        }
        session.caches.trim()
        sinceTrim += pages.samples
        if sinceTrim >= transactionSamples {
            sinceTrim = 0
            trimHeap()
        }
        pages.publish()
        shared.lock.withLock {
            shared.transactions += 1
            for p in pages.byRun { shared.totals.add(p.result) }
        }
        return taken
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
