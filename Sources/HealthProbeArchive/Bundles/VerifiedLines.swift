import Dispatch
import Foundation
import HealthProbeCanonical

/// The first stage of applying a bundle: on its own thread, reads the bundle's
/// lines and runs them through a `BundleVerifier` (canonical parse, item and
/// payload hashes), handing the decoded lines over in batches while the caller
/// applies the previous ones to SQLite. At most `depth` batches wait, so memory
/// stays bounded whatever the bundle's size. A verification error is delivered
/// in order: after every line that verified before it.
final class VerifiedLines: @unchecked Sendable {
    static let batchSize = 256
    private let depth: Int
    private let condition = NSCondition()
    private var batches: [[FlatJSON]] = []
    private var failure: (any Error)?
    private var finished = false
    private var cancelled = false
    private var verifier: BundleVerifier?
    private let done = DispatchSemaphore(value: 0)

    /// Starts verifying `lines` on a new thread.
    init<S: Sequence<[UInt8]>>(_ lines: S, depth: Int = 2) {
        self.depth = depth
        let source = UncheckedBox(AnyIterator(lines.makeIterator()))
        Thread.detachNewThread { [self] in
            var verifier = BundleVerifier()
            var batch: [FlatJSON] = []
            batch.reserveCapacity(Self.batchSize)
            var error: (any Error)?
            do {
                let iterator = source.value
                while let bytes = iterator.next() {
                    batch.append(try verifier.feed(bytes))
                    if batch.count == Self.batchSize {
                        guard put(batch) else { break }
                        batch.removeAll(keepingCapacity: true)
                    }
                }
            } catch let e {
                error = e
            }
            if !batch.isEmpty { _ = put(batch) }
            condition.lock()
            failure = error
            self.verifier = verifier
            finished = true
            condition.broadcast()
            condition.unlock()
            done.signal()
        }
    }

    private func put(_ batch: [FlatJSON]) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while batches.count >= depth && !cancelled { condition.wait() }
        if cancelled { return false }
        batches.append(batch)
        condition.broadcast()
        return true
    }

    /// The next batch of verified lines, in order; nil after the last. Throws the
    /// verification error once every line before it was handed out.
    func next() throws -> [FlatJSON]? {
        condition.lock()
        defer { condition.unlock() }
        while batches.isEmpty && !finished { condition.wait() }
        if !batches.isEmpty {
            let b = batches.removeFirst()
            condition.broadcast()
            return b
        }
        if let failure { throw failure }
        return nil
    }

    /// Waits for the verifying thread to end and returns its verifier (after
    /// `next` returned nil: every line was read and verified).
    func finish() -> BundleVerifier {
        done.wait()
        done.signal()
        return condition.withLock { verifier! }
    }

    /// Stops the verifying thread early (the caller stopped applying) and waits for it.
    func cancel() {
        condition.withLock {
            cancelled = true
            condition.broadcast()
        }
        done.wait()
        done.signal()
    }
}
