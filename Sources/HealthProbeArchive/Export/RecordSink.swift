import Dispatch
import Foundation

/// The second stage of a record export: while the SQLite reader builds items
/// on the calling thread, a serial queue hashes them, feeds the manifest and
/// writes the file, in batches, at most a few batches in flight.
final class RecordSink: @unchecked Sendable {
    private(set) var manifest: ExportManifestHasher
    private(set) var byType: [String: Int] = [:]
    private(set) var count = 0
    private let output: ExportOutput
    /// Non-nil for the CSV export (the export id of every row).
    private let csvExportID: String?
    /// `export_id,` as bytes.
    private let csvPrefix: [UInt8]?
    private let queue = DispatchQueue(label: "healthprobe.export.sink")
    private let slots = DispatchSemaphore(value: 4)
    private let lock = NSLock()
    private var error: (any Error)?
    static let batchSize = 512

    init(manifest: ExportManifestHasher, output: ExportOutput, csvExportID: String?) {
        self.manifest = manifest
        self.output = output
        self.csvExportID = csvExportID
        csvPrefix = csvExportID.map { Array((CSV.field($0) + ",").utf8) }
    }

    private var failure: (any Error)? { lock.withLock { error } }

    /// Streams every item of `source` through the sink; rethrows the first error.
    func drain(_ source: RecordItems, isCancelled: () -> Bool, progress: (Int) -> Void) throws {
        if isCancelled() { throw ArchiveError(.cancelled, "the export was cancelled; no file was left and no completed manifest was recorded") }
        var produced = 0
        try source.forEach(batchSize: Self.batchSize) { batch in
            try submit(batch)
            produced += batch.items.count
            if isCancelled() { throw ArchiveError(.cancelled, "the export was cancelled; no file was left and no completed manifest was recorded") }
            if produced & 8191 < Self.batchSize { progress(produced) }
            return true
        }
        queue.sync {}
        if let failure { throw failure }
    }

    private func submit(_ batch: RecordBatch) throws {
        if let failure { throw failure }
        slots.wait()
        queue.async { [self] in
            defer { slots.signal() }
            guard failure == nil else { return }
            do { try consume(batch) } catch { lock.withLock { if self.error == nil { self.error = error } } }
        }
    }

    private static let itemHashKey = Array(",\"item_hash\":\"".utf8)

    private func consume(_ batch: RecordBatch) throws {
        var perType = [Int](repeating: 0, count: batch.types.count)
        try batch.bytes.withUnsafeBytes { bytes in
            for item in batch.items {
                perType[item.type] += 1
                if let id = csvPrefix {
                    // The hash input, then the row's cells.
                    var hash = ArchiveHasher.sha256(.exportItem, buffer: UnsafeRawBufferPointer(rebasing: bytes[item.start..<item.hashAt]))
                    manifest.add(itemHash: hash)
                    try output.write(id)
                    try output.write(UnsafeRawBufferPointer(rebasing: bytes[item.hashAt..<item.end]))
                    try output.write([UInt8(ascii: ",")])
                    try hash.withUTF8 { try output.write(UnsafeRawBufferPointer($0)) }
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
        for (i, n) in perType.enumerated() where n > 0 { byType[batch.types[i], default: 0] += n }
    }
}
