import Foundation
import HPZlib
import ZIPFoundation

/// Streams one zip entry: a producer thread inflates it (ZIPFoundation) into a
/// small bounded queue; `read` pulls from the queue. Memory is bounded by the
/// queue (4 chunks). The CRC-32 is computed with zlib's `crc32` (ZIPFoundation's
/// own, byte at a time, cost 4% of an import's CPU) and checked against the
/// entry's. A CRC mismatch or inflate error surfaces as an error from `read`
/// before the end of data is reported.
final class ZipEntrySource: ByteSource, @unchecked Sendable {
    private let lock = NSCondition()
    private var chunks: [Data] = []
    private var current = Data()
    private var offset = 0
    private var finished = false
    private var failure: (any Error)?
    private var cancelled = false
    private let capacity = 4
    let totalBytes: Int64?
    let entryPath: String
    private var thread: Thread?

    private struct Cancelled: Error {}

    /// The inflated member's CRC-32 is not the one the zip records.
    struct ChecksumMismatch: Error, CustomStringConvertible {
        let expected: UInt32, computed: UInt32
        var description: String { String(format: "CRC-32 %08x computed, %08x recorded", computed, expected) }
    }

    /// The archive and entry move to the producer thread and are used only there.
    private final class Handoff: @unchecked Sendable {
        let archive: ZIPFoundation.Archive
        let entry: Entry
        init(archive: ZIPFoundation.Archive, entry: Entry) { self.archive = archive; self.entry = entry }
    }

    init(zipPath: String, entryPath: String) throws {
        self.entryPath = entryPath
        let archive = try ZipEntrySource.openArchive(zipPath)
        guard let entry = archive[entryPath] else {
            throw ImportError(.notAnExport, "\(zipPath) has no member \(entryPath)")
        }
        totalBytes = Int64(entry.uncompressedSize)
        let handoff = Handoff(archive: archive, entry: entry)
        let t = Thread { [self] in
            do {
                var crc = crc32(0, nil, 0)
                _ = try handoff.archive.extract(handoff.entry, bufferSize: 256 * 1024, skipCRC32: true) { data in
                    crc = data.withUnsafeBytes { crc32(crc, $0.bindMemory(to: Bytef.self).baseAddress, uInt($0.count)) }
                    self.lock.lock()
                    defer { self.lock.unlock() }
                    while self.chunks.count >= self.capacity && !self.cancelled { self.lock.wait() }
                    if self.cancelled { throw Cancelled() }
                    self.chunks.append(data)
                    self.lock.broadcast()
                }
                guard UInt32(truncatingIfNeeded: crc) == handoff.entry.checksum else {
                    throw ChecksumMismatch(expected: handoff.entry.checksum, computed: UInt32(truncatingIfNeeded: crc))
                }
                self.lock.lock()
                self.finished = true
            } catch is Cancelled {
                self.lock.lock()
                self.finished = true
            } catch {
                self.lock.lock()
                self.failure = error
                self.finished = true
            }
            self.lock.broadcast()
            self.lock.unlock()
        }
        t.stackSize = 1 << 20
        thread = t
        t.start()
    }

    static func openArchive(_ path: String) throws -> ZIPFoundation.Archive {
        do {
            return try ZIPFoundation.Archive(url: URL(fileURLWithPath: path), accessMode: .read)
        } catch {
            throw ImportError(.corruptZip, "\(path) is not a readable zip archive (truncated or corrupt: its central directory could not be read)", cause: error)
        }
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, _ max: Int) throws -> Int {
        if offset >= current.count {
            lock.lock()
            while chunks.isEmpty && !finished { lock.wait() }
            if chunks.isEmpty {
                let f = failure
                lock.unlock()
                if let f {
                    throw ImportError(.corruptZip, "the zip member \(entryPath) is corrupt (inflate or CRC check failed)", cause: f)
                }
                return 0
            }
            current = chunks.removeFirst()
            offset = 0
            lock.broadcast()
            lock.unlock()
        }
        let n = min(max, current.count - offset)
        current.withUnsafeBytes { raw in
            buffer.update(from: raw.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self), count: n)
        }
        offset += n
        return n
    }

    func close() {
        lock.lock()
        cancelled = true
        lock.broadcast()
        lock.unlock()
    }

    deinit { close() }
}
