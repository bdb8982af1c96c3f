import Foundation
import Synchronization
import HealthProbeCanonical

/// The second stage of a record export: the SQLite readers build items a
/// type at a time (the calling thread, and a helper connection on the same
/// snapshot when there is one: while one type's rows are written, the next
/// type's sorted statement runs); a `ConsumerStage` hashes them in the spec's
/// order, feeds the manifest and writes the file, a few batches in flight.
/// A reader submits a type's batches once that type's turn came: the type before it ended.
/// The manifest, counts and file belong to a `Writer` that lives on the stage's
/// thread until `finish` joined it; the readers share `Turns`, which is `Sendable`, and
/// the source and its types (moved whole to the helper's connection, in an `UncheckedBox`).
final class RecordSink {
    /// The manifest, the items by type and their count, once `drain` returned.
    private(set) var manifest: ExportManifestHasher
    private(set) var byType: [String: Int] = [:]
    private(set) var count = 0
    private let output: ExportOutput
    /// `export_id,` as bytes, for the CSV export (the export id of every row).
    private let csvPrefix: [UInt8]?
    static let batchSize = 512
    /// Each reader's page cache during the export, which also sizes SQLite's
    /// in-memory sort runs: two readers sort at once.
    static let cacheKiB = 4096
    private let batchSize: Int

    init(manifest: ExportManifestHasher, output: ExportOutput, csvExportID: String?, batchSize: Int = RecordSink.batchSize) {
        self.batchSize = batchSize
        self.manifest = manifest
        self.output = output
        csvPrefix = csvExportID.map { Array((CSV.field($0) + ",").utf8) }
    }

    /// Streams every item of `source` through the sink, reading on the calling
    /// thread and on `helper`'s connection; rethrows the first error.
    func drain(_ source: RecordItems, helper: ExportHelper?, isCancelled: () -> Bool, progress: (Int) -> Void) throws {
        if isCancelled() { throw Exporter.cancelled }
        let writer = Writer(manifest: manifest, output: output, csvPrefix: csvPrefix)
        // The writer moves to the stage's thread, and is read here again once `finish` joined it.
        let stage = ConsumerStage<RecordBatch>(name: "healthprobe.export.sink", depth: 4) { batch in try writer.consume(batch) }
        let typeRows = try source.typeRows()
        let turns = Turns(typeCount: typeRows.count, stage: stage, batchSize: batchSize)
        let shared = UncheckedBox((source, typeRows))
        helper?.offer { db in
            do {
                try turns.work(try shared.value.0.reading(db), shared.value.1, isCancelled: { false }, progress: { _ in })
            } catch { turns.fail(error) }
        }
        do { try turns.work(source, typeRows, isCancelled: isCancelled, progress: progress) } catch { turns.fail(error) }
        turns.awaitLast()
        do { try stage.finish() } catch { turns.fail(error) }
        try turns.failure.check()
        manifest = writer.manifest
        byType = writer.byType
        count = writer.count
    }

    /// What the readers share: whose turn it is, the next type to claim, the first error, the stage.
    final class Turns: Sendable {
        /// Type `i`'s turn came once `gates[i]` holds an element: the reader of type `i - 1` puts
        /// it when that type ended (`gates[0]` is open; `gates[typeCount]` opens after the last).
        private let gates: [BoundedQueue<Void>]
        private let typeCount: Int
        /// The next type a reader may claim, and the items submitted so far.
        private let tally = Mutex((nextType: 0, submitted: 0))
        let failure = FirstError()
        private let stage: ConsumerStage<RecordBatch>
        private let batchSize: Int

        init(typeCount: Int, stage: ConsumerStage<RecordBatch>, batchSize: Int) {
            self.typeCount = typeCount
            self.stage = stage
            self.batchSize = batchSize
            gates = (0...typeCount).map { _ in BoundedQueue<Void>(capacity: 1) }
            try? gates[0].put(())
        }

        /// Records the first error; a reader waiting for its turn throws it.
        func fail(_ error: any Error) {
            guard failure.record(error) else { return }
            for gate in gates { gate.cancel(error) }
        }

        /// Waits until the last type ended, or a failure.
        func awaitLast() { _ = try? gates[typeCount].take() }

        /// Claims types one after another and submits their batches in turn, with
        /// the reader's page cache bounded to `cacheKiB`.
        func work(_ source: RecordItems, _ typeRows: [(Int64, String)], isCancelled: () -> Bool, progress: (Int) -> Void) throws {
            try source.db.withBoundedCache(kib: RecordSink.cacheKiB) {
                while let type = claim() {
                    var turn = false
                    try source.forEach(typeIndex: type, of: typeRows, batchSize: batchSize) { batch in
                        if isCancelled() { throw Exporter.cancelled }
                        if !turn { try awaitTurn(type); turn = true }
                        let total = try submit(batch)
                        if total / 8192 != (total - batch.items.count) / 8192 { progress(total) }
                    }
                    if !turn { try awaitTurn(type) }
                    try? gates[type + 1].put(())
                }
            }
        }

        private func claim() -> Int? {
            guard failure.error == nil else { return nil }
            return tally.withLock { p in
                guard p.nextType < typeCount else { return nil }
                p.nextType += 1
                return p.nextType - 1
            }
        }

        /// Waits for `type`'s turn (or a failure, which it throws).
        private func awaitTurn(_ type: Int) throws {
            if try gates[type].take() == nil { throw failure.error ?? CancellationError() }
        }

        /// Queues `batch` of the type whose turn it is for hashing and writing;
        /// returns the number of items submitted so far.
        private func submit(_ batch: RecordBatch) throws -> Int {
            try failure.check()
            let total = tally.withLock { p in
                p.submitted += batch.items.count
                return p.submitted
            }
            do { try stage.submit(batch) } catch {
                fail(error)
                throw error
            }
            return total
        }
    }
}

/// Hashes and writes the batches, on the sink's stage thread only.
private final class Writer {
    var manifest: ExportManifestHasher
    var byType: [String: Int] = [:]
    var count = 0
    let output: ExportOutput
    let csvPrefix: [UInt8]?

    init(manifest: ExportManifestHasher, output: ExportOutput, csvPrefix: [UInt8]?) {
        self.manifest = manifest
        self.output = output
        self.csvPrefix = csvPrefix
    }

    private static let itemHashKey = Array(",\"item_hash\":\"".utf8)

    func consume(_ batch: RecordBatch) throws {
        try batch.bytes.withUnsafeBytes { bytes in
            for item in batch.items {
                if let id = csvPrefix {
                    // The hash input, then the row's cells.
                    var hash = ArchiveHasher.sha256(.exportItem, buffer: UnsafeRawBufferPointer(rebasing: bytes[item.start..<item.hashAt]))
                    manifest.add(itemHash: hash)
                    try output.write(id)
                    try output.write(UnsafeRawBufferPointer(rebasing: bytes[item.hashAt..<item.tailAt]))
                    try output.write([UInt8(ascii: ",")])
                    try hash.withUTF8 { try output.write(UnsafeRawBufferPointer($0)) }
                    try output.write(UnsafeRawBufferPointer(rebasing: bytes[item.tailAt..<item.end]))
                    try output.write([0x0D, 0x0A])
                } else {
                    // The item with its `item_hash` member spliced in at `hashAt`.
                    var hash = ArchiveHasher.sha256(.exportItem, buffer: UnsafeRawBufferPointer(rebasing: bytes[item.start..<item.end]))
                    if count > 0 { try output.write([UInt8(ascii: ","), 0x0A]) }
                    try output.write(UnsafeRawBufferPointer(rebasing: bytes[item.start..<item.hashAt]))
                    try output.write(Self.itemHashKey)
                    try hash.withUTF8 { try output.write(UnsafeRawBufferPointer($0)) }
                    try output.write([UInt8(ascii: "\"")])
                    try output.write(UnsafeRawBufferPointer(rebasing: bytes[item.hashAt..<item.end]))
                    manifest.add(itemHash: hash)
                }
                count += 1
            }
        }
        byType[batch.type, default: 0] += batch.items.count
    }
}
