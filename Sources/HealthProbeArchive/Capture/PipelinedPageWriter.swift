import Dispatch
import Foundation

/// Writes a type run's pages with normalization and hashing of the next page
/// running on a second core while the current page is written to SQLite.
/// Pages are numbered from `firstIndex` in submission order. Not thread-safe:
/// call from one thread. While a pipeline is active, do not call the run's
/// `writePage` directly.
public final class PipelinedPageWriter {
    private let run: TypeRunWriter
    private let queue = DispatchQueue(label: "healthprobe.capture.normalize")
    private var nextIndex: Int
    private var inFlight: (index: Int, box: Box, group: DispatchGroup)?
    public private(set) var totals = PageResult()

    /// The normalization result of one page, handed between threads.
    private final class Box: @unchecked Sendable {
        var result: Result<[NormalizedSample], any Error> = .success([])
    }

    /// The normalizer is only used on `queue` while this writer is active.
    private final class NormalizerRef: @unchecked Sendable {
        let normalizer: SampleNormalizer
        let type: String
        init(_ n: SampleNormalizer, _ t: String) { normalizer = n; type = t }
    }
    private let normalizer: NormalizerRef

    public init(run: TypeRunWriter, firstIndex: Int = 0) {
        self.run = run
        nextIndex = firstIndex
        normalizer = NormalizerRef(run.session.normalizer, run.type.identifier)
    }

    /// Queues a page for normalization and writes the previously queued one.
    public func submit(_ samples: [CapturedSample]) throws {
        let box = Box()
        let group = DispatchGroup()
        let ref = normalizer
        group.enter()
        let previous = inFlight
        // The queue is serial: this page is normalized after the previous one.
        queue.async {
            var out: [NormalizedSample] = []
            out.reserveCapacity(samples.count)
            do {
                for s in samples { out.append(try ref.normalizer.normalize(s, typeIdentifier: ref.type)) }
                box.result = .success(out)
            } catch {
                box.result = .failure(error)
            }
            group.leave()
        }
        inFlight = (nextIndex, box, group)
        nextIndex += 1
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

    private func write(_ item: (index: Int, box: Box, group: DispatchGroup)) throws {
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
        totals.add(try run.writePage(index: item.index, normalized: normalized))
    }
}
