import Foundation
import HealthProbeArchive
import HPZlib
import ZIPFoundation

/// Streams one zip entry: a `ProducerStage` inflates it (`ZipMemberData`) into a small
/// bounded queue; `read` pulls from it. Memory is bounded by the queue (4 chunks). The
/// CRC-32 is computed with zlib's `crc32` (ZIPFoundation's own, byte at a time, cost 4%
/// of an import's CPU) and checked against the entry's. A CRC mismatch or inflate error
/// surfaces as an error from `read` before the end of data is reported.
final class ZipEntrySource: ByteSource {
    private let stage: ProducerStage<Data>
    private var current = Data()
    private var offset = 0
    let totalBytes: Int64?
    let entryPath: String

    /// The inflated member's CRC-32 is not the one the zip records.
    struct ChecksumMismatch: Error, CustomStringConvertible {
        let expected: UInt32, computed: UInt32
        var description: String { String(format: "CRC-32 %08x computed, %08x recorded", computed, expected) }
    }

    /// Inflated bytes are counted on `meter` as they come (the declared sizes are not trusted).
    init(zipPath: String, entryPath: String, meter: InflateMeter = InflateMeter(ZipLimits())) throws {
        self.entryPath = entryPath
        let (archive, members) = try ZipEntrySource.openArchive(zipPath)
        guard let (index, entry) = archive.enumerated().first(where: { $0.element.path == entryPath }) else {
            throw ImportError(.notAnExport, "\(zipPath) has no member \(entryPath)")
        }
        let member = try ZipEntrySource.member(members, index, of: zipPath)
        totalBytes = Int64(exactly: entry.uncompressedSize)  // declared (progress only); nil when absurd
        // Values only move to the stage's thread: it reads the member's data itself.
        let declared = entry.uncompressedSize, compressed = entry.compressedSize, checksum = entry.checksum
        stage = ProducerStage(name: "healthprobe.import.unzip", depth: 4, stackSize: 1 << 20) { emit in
            var crc = crc32(0, nil, 0)
            var inflated: UInt64 = 0
            try member.read(path: zipPath, chunk: 256 * 1024) { data in
                inflated &+= UInt64(data.count)
                try meter.count(chunk: data.count, memberSoFar: inflated, member: entryPath, declared: declared, compressed: compressed)
                crc = data.withUnsafeBytes { crc32(crc, $0.bindMemory(to: Bytef.self).baseAddress, uInt($0.count)) }
                try emit(data)
            }
            guard UInt32(truncatingIfNeeded: crc) == checksum else {
                throw ChecksumMismatch(expected: checksum, computed: UInt32(truncatingIfNeeded: crc))
            }
        }
    }

    /// The archive (its members listed by ZIPFoundation) and each member's data (`ZipMemberData`, read by
    /// HealthProbe: ZIPFoundation's inflate may never end on a member whose stream does not end in it).
    static func openArchive(_ path: String) throws -> (ZIPFoundation.Archive, [ZipMemberData]) {
        // Every offset and size inside the file before ZIPFoundation converts them unchecked.
        let members = try ZipDirectoryCheck.check(path)
        do {
            return (try ZIPFoundation.Archive(url: URL(fileURLWithPath: path), accessMode: .read), members)
        } catch {
            throw ImportError(.corruptZip, "\(path) is not a readable zip archive (truncated or corrupt: its central directory could not be read)", cause: error)
        }
    }

    /// Member `index`'s data, as ZIPFoundation lists it at that index.
    static func member(_ members: [ZipMemberData], _ index: Int, of path: String) throws -> ZipMemberData {
        guard index < members.count else {
            throw ImportError(.corruptZip, "\(path) is not a readable zip archive: its directory lists member \(index + 1) where its data cannot be found")
        }
        return members[index]
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, _ max: Int) throws -> Int {
        while offset >= current.count {
            let next: Data?
            do { next = try stage.next() } catch let e as InflateMeter.Exceeded {
                throw ImportError(.inflateLimit, e.description)
            } catch {
                throw ImportError(.corruptZip, "the zip member \(entryPath) is corrupt (inflate or CRC check failed)", cause: error)
            }
            guard let next else { return 0 }
            current = next
            offset = 0
        }
        let n = min(max, current.count - offset)
        current.withUnsafeBytes { raw in
            buffer.update(from: raw.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self), count: n)
        }
        offset += n
        return n
    }

    func close() { stage.cancel() }
}
