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
        var batch: [RecordItem] = []
        batch.reserveCapacity(Self.batchSize)
        var produced = 0
        try source.forEach { item in
            batch.append(item)
            produced += 1
            if batch.count == Self.batchSize {
                try submit(batch)
                batch.removeAll(keepingCapacity: true)
                if isCancelled() { throw ArchiveError(.cancelled, "the export was cancelled; no file was left and no completed manifest was recorded") }
                if produced & 8191 == 0 { progress(produced) }
            }
            return true
        }
        if !batch.isEmpty { try submit(batch) }
        queue.sync {}
        if let failure { throw failure }
    }

    private func submit(_ batch: [RecordItem]) throws {
        if let failure { throw failure }
        slots.wait()
        queue.async { [self] in
            defer { slots.signal() }
            guard failure == nil else { return }
            do { try consume(batch) } catch { lock.withLock { if self.error == nil { self.error = error } } }
        }
    }

    private func consume(_ batch: [RecordItem]) throws {
        for item in batch {
            byType[item.typeIdentifier, default: 0] += 1
            if let id = csvPrefix {
                let hash = ArchiveHasher.sha256(.exportItem, item.csvHashInput)
                manifest.add(itemHash: hash)
                var line = id
                line.append(contentsOf: item.csvRow)
                line.append(UInt8(ascii: ","))
                line.append(contentsOf: Array(hash.utf8))
                line.append(contentsOf: [0x0D, 0x0A])
                try output.write(line)
            } else {
                let (json, hash) = item.sealed()
                if count > 0 { try output.write([UInt8(ascii: ","), 0x0A]) }
                try output.write(json)
                manifest.add(itemHash: hash)
            }
            count += 1
        }
    }
}
