import Dispatch
import Foundation

/// Writes pages of one or more type runs of a capture, normalizing and
/// hashing the next page on a second core while the current one is written
/// to SQLite. Each run's pages are numbered from its `nextPageIndex` in
/// submission order. Not thread-safe: call from one thread. While a pipeline
/// is active, do not call a run's `writePage` directly.
public final class PipelinedPageWriter {
    private let queue = DispatchQueue(label: "healthprobe.capture.normalize")
    private var inFlight: (run: TypeRunWriter, index: Int, box: Box, group: DispatchGroup)?
    public private(set) var totals = PageResult()

    /// The normalization result of one page, handed between threads.
    private final class Box: @unchecked Sendable {
        var result: Result<[NormalizedSample], any Error> = .success([])
    }

    /// The session's normalizer, used only on `queue` while this writer is active.
    private final class NormalizerRef: @unchecked Sendable {
        let normalizer: SampleNormalizer
        init(_ n: SampleNormalizer) { normalizer = n }
    }
    private let normalizer: NormalizerRef

    public init(session: CaptureSession) {
        normalizer = NormalizerRef(session.normalizer)
    }

    /// A writer for a single run.
    public convenience init(run: TypeRunWriter) { self.init(session: run.session) }

    /// Queues a page of `run` for normalization and writes the previously queued page.
    public func submit(_ samples: [CapturedSample], to run: TypeRunWriter) throws {
        let box = Box()
        let group = DispatchGroup()
        let ref = normalizer
        let type = run.type.identifier
        group.enter()
        let previous = inFlight
        // The queue is serial: this page is normalized after the previous one.
        queue.async {
            var out: [NormalizedSample] = []
            out.reserveCapacity(samples.count)
            do {
                for s in samples { out.append(try ref.normalizer.normalize(s, typeIdentifier: type)) }
                box.result = .success(out)
            } catch {
                box.result = .failure(error)
            }
            group.leave()
        }
        inFlight = (run, run.nextPageIndex, box, group)
        run.nextPageIndex += 1
        if let previous { try write(previous) }
    }

    /// Writes what is still queued; returns the totals over all pages.
    @discardableResult
    public func flush() throws -> PageResult {
        if let pending = inFlight {
            inFlight = nil
            try write(pending)
        }
        return totals
    }

    private func write(_ item: (run: TypeRunWriter, index: Int, box: Box, group: DispatchGroup)) throws {
        item.group.wait()
        let normalized: [NormalizedSample]
        do {
            normalized = try item.box.result.get()
        } catch {
            // Let any later page finish normalizing before reporting.
            inFlight?.group.wait()
            inFlight = nil
            throw error
        }
        totals.add(try item.run.writePage(index: item.index, normalized: normalized))
    }
}
