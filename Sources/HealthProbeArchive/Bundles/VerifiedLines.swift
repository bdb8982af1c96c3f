import Foundation
import HealthProbeCanonical

/// The first stage of applying a bundle: a reading thread cuts the bundle's lines into
/// batches and deals them in turn to `decoders` threads, which parse, decode and hash
/// each line on its own (`BundleVerifier.decode`); the caller takes the batches back in
/// order, and a `BundleVerifier` checks what depends on the lines before (order, the
/// rules between items, the manifest) as it hands the decoded lines (`BundleLine`) on,
/// while the caller applies the previous ones to SQLite. Each hand-off holds at most
/// `depth` batches, so memory stays bounded whatever the bundle's size. A verification
/// error is delivered in order: after every line that verified before it.
///
/// With one decoding thread, the verification was the longer of the two sides of an
/// apply (docs/restore-measurements.md): two keep both cores busy.
final class VerifiedLines: Sendable {
    static let batchSize = 256
    static let decoders = 2
    private let reader: StageThread
    private let workers: [StageThread]
    /// Batch `i` goes to decoder `i % decoders` and comes back from its output.
    private let inputs: [BoundedQueue<RawBatch>]
    private let outputs: [BoundedQueue<[BundleVerifier.DecodedLine]>]
    /// The in-order side: used only by the thread calling `next` and `finish`.
    private let ordered = Ordered()
    /// Ends the source's wait for lines still to come (`StoppableLines`), for `cancel`.
    private let stopSource: (@Sendable () -> Void)?

    /// Lines cut from the source, numbered from `firstLine`.
    private struct RawBatch: Sendable {
        let firstLine: Int
        let lines: [[UInt8]]
    }

    /// `@unchecked Sendable`: `unterminated` is written by the reading thread before it closes
    /// the inputs, and read after the outputs ended (each hand-off's lock orders the two);
    /// the rest only on the thread calling `next`.
    private final class Ordered: @unchecked Sendable {
        var verifier = BundleVerifier()
        var batch = 0
        var pending: BundleError?
        var ended = false
        var unterminated = false
    }

    /// Starts reading and decoding `lines`.
    init<S: Sequence<[UInt8]>>(_ lines: S, depth: Int = 2) {
        let inputs = (0..<Self.decoders).map { _ in BoundedQueue<RawBatch>(capacity: depth) }
        let outputs = (0..<Self.decoders).map { _ in BoundedQueue<[BundleVerifier.DecodedLine]>(capacity: depth) }
        self.inputs = inputs
        self.outputs = outputs
        let source = UncheckedBox(lines), ordered = self.ordered
        stopSource = (lines as? any StoppableLines).map { stoppable in
            let box = UncheckedBox(stoppable)
            return { box.value.stopLines() }
        }
        reader = StageThread(name: "healthprobe.bundle.read") {
            var iterator = source.value.makeIterator()
            var batch: [[UInt8]] = []
            batch.reserveCapacity(Self.batchSize)
            var (index, next) = (0, 1)
            func deal() throws {
                try inputs[index % inputs.count].put(RawBatch(firstLine: next, lines: batch))
                index += 1
                next += batch.count
                batch = []
                batch.reserveCapacity(Self.batchSize)
            }
            do {
                while let line = iterator.next() {
                    batch.append(line)
                    if batch.count == Self.batchSize { try deal() }
                }
                if !batch.isEmpty { try deal() }
                ordered.unterminated = (iterator as? any LineEndReporting)?.lastLineUnterminated ?? false
                for q in inputs { q.close() }
            } catch {
                for q in inputs { q.close(failure: error) }
            }
        }
        workers = (0..<Self.decoders).map { k in
            StageThread(name: "healthprobe.bundle.verify") {
                do {
                    while let raw = try inputs[k].take() {
                        var decoded: [BundleVerifier.DecodedLine] = []
                        decoded.reserveCapacity(raw.lines.count)
                        for (i, line) in raw.lines.enumerated() { decoded.append(BundleVerifier.decode(line, line: raw.firstLine + i)) }
                        try outputs[k].put(decoded)
                    }
                    outputs[k].close()
                } catch {
                    outputs[k].close(failure: error)
                }
            }
        }
    }

    deinit {
        for q in inputs { q.cancel() }
        for q in outputs { q.cancel() }
    }

    /// The next batch of verified lines, in order; nil after the last. Throws the
    /// verification error once every line before it was handed out.
    func next() throws -> [BundleLine]? {
        let o = ordered
        if let e = o.pending { throw e }
        if o.ended { return nil }
        guard let decoded = try outputs[o.batch % outputs.count].take() else {
            // Every batch was taken: the lines ended.
            o.ended = true
            try o.verifier.endOfLines(unterminated: o.unterminated)
            return nil
        }
        o.batch += 1
        var out: [BundleLine] = []
        out.reserveCapacity(decoded.count)
        for line in decoded {
            do { out.append(try o.verifier.feed(line)) } catch {
                guard !out.isEmpty else { throw error }
                // The lines that verified before it go first.
                o.pending = error
                return out
            }
        }
        return out
    }

    /// Waits for the reading and decoding threads to end and returns the verifier
    /// (after `next` returned nil: every line was read and verified).
    func finish() -> BundleVerifier {
        join()
        return ordered.verifier
    }

    /// Stops the threads early (the caller stopped applying) and waits for them; idempotent.
    func cancel() {
        stopSource?()
        for q in inputs { q.cancel() }
        for q in outputs { q.cancel() }
        join()
    }

    private func join() {
        reader.join()
        for w in workers { w.join() }
    }
}
