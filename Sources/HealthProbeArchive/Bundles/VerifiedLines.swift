import Foundation
import HealthProbeCanonical

/// The first stage of applying a bundle: a `ProducerStage` reads the bundle's lines
/// and runs them through a `BundleVerifier` (canonical parse, item and payload hashes),
/// handing the decoded lines (typed items: `BundleLine`) over in batches while the caller applies the previous
/// ones to SQLite. At most `depth` batches wait, so memory stays bounded whatever the
/// bundle's size. A verification error is delivered in order: after every line that
/// verified before it.
final class VerifiedLines: Sendable {
    static let batchSize = 256
    private let stage: ProducerStage<[BundleLine]>
    /// The verifier once every line went through it (set on the stage's thread before it ends).
    private let result = Result()

    /// `@unchecked Sendable`: `verifier` is written on the stage's thread before it ends and read only after `join`, which waits for that end.
    private final class Result: @unchecked Sendable {
        var verifier: BundleVerifier?
    }

    /// Starts verifying `lines` on the stage's thread.
    init<S: Sequence<[UInt8]>>(_ lines: S, depth: Int = 2) {
        let result = self.result
        let source = UncheckedBox(lines)
        stage = ProducerStage(name: "healthprobe.bundle.verify", depth: depth) { emit in
            var verifier = BundleVerifier()
            var batch: [BundleLine] = []
            batch.reserveCapacity(Self.batchSize)
            do {
                try verifier.feed(all: source.value) { decoded in
                    batch.append(decoded)
                    if batch.count == Self.batchSize {
                        try emit(batch)
                        batch.removeAll(keepingCapacity: true)
                    }
                }
            } catch let error as BundleError {
                // Every line that verified before the error goes first.
                if !batch.isEmpty { try emit(batch) }
                throw error
            }
            if !batch.isEmpty { try emit(batch) }
            result.verifier = verifier
        }
    }

    /// The next batch of verified lines, in order; nil after the last. Throws the
    /// verification error once every line before it was handed out.
    func next() throws -> [BundleLine]? { try stage.next() }

    /// Waits for the verifying thread to end and returns its verifier (after
    /// `next` returned nil: every line was read and verified).
    func finish() -> BundleVerifier {
        stage.join()
        return result.verifier!
    }

    /// Stops the verifying thread early (the caller stopped applying) and waits for it.
    func cancel() { stage.cancel() }
}
