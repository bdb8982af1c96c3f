import Dispatch
import Foundation

/// Writes pages of one or more type runs of a capture through a three-stage
/// pipeline: the caller produces pages (parsing, generating), one serial
/// queue normalizes and hashes them, another writes them to SQLite in
/// submission order. At most `maxInFlight` pages are queued (memory stays
/// bounded). Each run's pages are numbered from its `nextPageIndex` in
/// submission order. The first error stops the pipeline and is thrown by the
/// next `submit` or by `flush`. Call from one thread; while a pipeline is
/// active, do not call a run's `writePage` directly or complete its runs
/// before `flush()` returns.
public final class PipelinedPageWriter {
    private let normalizeQueue = DispatchQueue(label: "healthprobe.capture.normalize")
    private let writeQueue = DispatchQueue(label: "healthprobe.capture.write")
    private let slots: DispatchSemaphore
    private let group = DispatchGroup()
    private let shared = Shared()

    /// State shared with the queues (guarded by its lock).
    private final class Shared: @unchecked Sendable {
        let lock = NSLock()
        var error: (any Error)?
        var totals = PageResult()
        var failed: Bool { lock.withLock { error != nil } }
        func fail(_ e: any Error) { lock.withLock { if error == nil { error = e } } }
    }

    /// A run handed to the write queue (used there, and on the caller's thread only after `flush`).
    private final class RunRef: @unchecked Sendable {
        let run: TypeRunWriter
        init(_ run: TypeRunWriter) { self.run = run }
    }

    private final class NormalizerRef: @unchecked Sendable {
        let normalizer: SampleNormalizer
        init(_ n: SampleNormalizer) { normalizer = n }
    }
    private let normalizer: NormalizerRef

    public init(session: CaptureSession, maxInFlight: Int = 3) {
        normalizer = NormalizerRef(session.normalizer)
        slots = DispatchSemaphore(value: maxInFlight)
    }

    /// A writer for a single run.
    public convenience init(run: TypeRunWriter) { self.init(session: run.session) }

    /// Totals over the pages written so far (complete after `flush`).
    public var totals: PageResult { shared.lock.withLock { shared.totals } }

    /// Queues a page of `run`; blocks while `maxInFlight` pages are queued.
    public func submit(_ samples: [CapturedSample], to run: TypeRunWriter) throws {
        if let e = shared.lock.withLock({ shared.error }) { throw e }
        slots.wait()
        let index = run.nextPageIndex
        run.nextPageIndex += 1
        let ref = RunRef(run), norm = normalizer, state = shared, slots = self.slots, group = self.group
        let writeQueue = self.writeQueue
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
            let page = out
            writeQueue.async {
                defer { slots.signal(); group.leave() }
                guard !state.failed else { return }
                do {
                    let r = try ref.run.writePage(index: index, normalized: page)
                    state.lock.withLock { state.totals.add(r) }
                } catch {
                    state.fail(error)
                }
            }
        }
    }

    /// Waits for every queued page; throws the first error, if any.
    @discardableResult
    public func flush() throws -> PageResult {
        group.wait()
        if let e = shared.lock.withLock({ shared.error }) { throw e }
        return totals
    }
}
