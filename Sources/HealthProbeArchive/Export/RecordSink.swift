import Dispatch
import Foundation
import HealthProbeCanonical

/// The second stage of a record export: the SQLite readers build items a
/// type at a time (the calling thread, and a helper connection on the same
/// snapshot when there is one: while one type's rows are written, the next
/// type's sorted statement runs); a `ConsumerStage` hashes them in the spec's
/// order, feeds the manifest and writes the file, a few batches in flight.
final class RecordSink: @unchecked Sendable {
    private(set) var manifest: ExportManifestHasher
    private(set) var byType: [String: Int] = [:]
    private(set) var count = 0
    private let output: ExportOutput
    /// Non-nil for the CSV export (the export id of every row).
    private let csvExportID: String?
    /// `export_id,` as bytes.
    private let csvPrefix: [UInt8]?
    /// Hashes and writes the batches, in the order they are submitted (made in `init`).
    private var stage: ConsumerStage<RecordBatch>!
    /// Guards the fields below; signalled when the turn moves on or a failure is recorded.
    private let turn = NSCondition()
    private var error: (any Error)?
    /// The type whose batches may be submitted now (types are written in order).
    private var current = 0
    /// The next type a reader may claim.
    private var nextType = 0
    private var typeCount = 0
    private var submitted = 0
    static let batchSize = 512
    /// Each reader's page cache during the export, which also sizes SQLite's
    /// in-memory sort runs: two readers sort at once.
    static let cacheKiB = 4096
    private let batchSize: Int

    init(manifest: ExportManifestHasher, output: ExportOutput, csvExportID: String?, batchSize: Int = RecordSink.batchSize) {
        self.batchSize = batchSize
        self.manifest = manifest
        self.output = output
        self.csvExportID = csvExportID
        csvPrefix = csvExportID.map { Array((CSV.field($0) + ",").utf8) }
        stage = ConsumerStage(name: "healthprobe.export.sink", depth: 4) { [unowned self] batch in try consume(batch) }
    }

    private var failure: (any Error)? { turn.withLock { error } }

    private func fail(_ error: any Error) {
        turn.withLock {
            if self.error == nil { self.error = error }
            turn.broadcast()
        }
    }

    /// Streams every item of `source` through the sink, reading on the calling
    /// thread and on `helper`'s connection; rethrows the first error.
    func drain(_ source: RecordItems, helper: ExportHelper?, isCancelled: () -> Bool, progress: (Int) -> Void) throws {
        if isCancelled() { throw Exporter.cancelled }
        let typeRows = try source.typeRows()
        turn.withLock { typeCount = typeRows.count }
        let shared = UncheckedBox((source, typeRows))
        helper?.offer { [self] db in
            do {
                try work(try shared.value.0.reading(db), shared.value.1, isCancelled: { false }, progress: { _ in })
            } catch { fail(error) }
        }
        do { try work(source, typeRows, isCancelled: isCancelled, progress: progress) } catch { fail(error) }
        turn.withLock { while current < typeCount && error == nil { turn.wait() } }
        do { try stage.finish() } catch { fail(error) }
        if let failure { throw failure }
    }

    /// Claims types one after another and submits their batches in turn, with
    /// the reader's page cache bounded to `cacheKiB`.
    private func work(_ source: RecordItems, _ typeRows: [(Int64, String)], isCancelled: () -> Bool, progress: (Int) -> Void) throws {
        try source.db.withBoundedCache(kib: Self.cacheKiB) {
            while let type = claim() {
                try source.forEach(typeIndex: type, of: typeRows, batchSize: batchSize) { batch in
                    if isCancelled() { throw Exporter.cancelled }
                    let total = try submit(batch, type: type)
                    if total / 8192 != (total - batch.items.count) / 8192 { progress(total) }
                }
                try finish(type)
            }
        }
    }

    private func claim() -> Int? {
        turn.withLock {
            guard error == nil, nextType < typeCount else { return nil }
            nextType += 1
            return nextType - 1
        }
    }

    /// Waits for `type`'s turn (or a failure).
    private func awaitTurn(_ type: Int) throws {
        while current != type && error == nil { turn.wait() }
        if let error { throw error }
    }

    /// Ends `type` once its turn has come: the next type's batches may go.
    private func finish(_ type: Int) throws {
        try turn.withLock {
            try awaitTurn(type)
            current = type + 1
            turn.broadcast()
        }
    }

    /// Queues `batch` of `type` for hashing and writing once its turn has
    /// come; returns the number of items submitted so far.
    private func submit(_ batch: RecordBatch, type: Int) throws -> Int {
        let total = try turn.withLock {
            try awaitTurn(type)
            submitted += batch.items.count
            return submitted
        }
        do { try stage.submit(batch) } catch {
            fail(error)
            throw error
        }
        return total
    }

    private static let itemHashKey = Array(",\"item_hash\":\"".utf8)

    private func consume(_ batch: RecordBatch) throws {
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
