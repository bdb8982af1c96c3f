import Foundation
import ZIPFoundation

/// An export.zip made by a test: one deflated `apple_health_export/export.xml` that really
/// inflates to `actualBytes` (an export's head with `records` synthetic heart-rate records,
/// blank padding, the closing tag), and, with `declaredBytes`, a local header and central
/// directory that lie about it, declaring that many bytes instead.
public enum CraftedZip {
    /// The export's records, distinct minutes of 2024-01-01 (UTC), synthetic values.
    public static func head(records: Int) -> [UInt8] {
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<HealthData locale=\"en_US\">\n <ExportDate value=\"2024-06-01 09:00:00 +0000\"/>\n"
        for i in 0..<records {
            let t = String(format: "2024-01-%02d %02d:%02d:00 +0000", 1 + i / 1440, (i / 60) % 24, i % 60)
            xml += " <Record type=\"HKQuantityTypeIdentifierHeartRate\" sourceName=\"Synthetic Watch\" unit=\"count/min\" creationDate=\"\(t)\" startDate=\"\(t)\" endDate=\"\(t)\" value=\"\(60 + i % 40)\"/>\n"
        }
        return Array(xml.utf8)
    }

    /// Writes the zip to `path`; returns the compressed size of its member.
    @discardableResult
    public static func write(to path: String, actualBytes: Int, declaredBytes: UInt32? = nil, records: Int = 2000) throws -> UInt64 {
        let head = head(records: records), tail = Array("</HealthData>\n".utf8)
        precondition(actualBytes >= head.count + tail.count, "actualBytes is smaller than the records")
        let padEnd = actualBytes - tail.count
        let blanks = [UInt8](repeating: 0x20, count: 1 << 20)
        try? FileManager.default.removeItem(atPath: path)
        try add(to: path, actualBytes: actualBytes) { position, size in
            var out = [UInt8]()
            out.reserveCapacity(size)
            var p = Int(position)
            let end = p + size
            while p < end {
                if p < head.count {
                    let n = min(end, head.count) - p
                    out.append(contentsOf: head[p..<(p + n)])
                    p += n
                } else if p < padEnd {
                    let n = min(end, padEnd, p + blanks.count) - p
                    out.append(contentsOf: blanks[0..<n])
                    p += n
                } else {
                    let i = p - padEnd, n = min(end - p, tail.count - i)
                    out.append(contentsOf: tail[i..<(i + n)])
                    p += n
                }
            }
            return Data(out)
        }
        // Read back from a new handle: the writing one is closed by now.
        let compressed = try ZIPFoundation.Archive(url: URL(fileURLWithPath: path), accessMode: .read)["apple_health_export/export.xml"]?.compressedSize ?? 0
        if let declaredBytes { try lie(path, declaredBytes) }
        return compressed
    }

    static func add(to path: String, actualBytes: Int, _ provider: (Int64, Int) throws -> Data) throws {
        let archive = try ZIPFoundation.Archive(url: URL(fileURLWithPath: path), accessMode: .create)
        try archive.addEntry(with: "apple_health_export/export.xml", type: .file, uncompressedSize: Int64(actualBytes), compressionMethod: .deflate, provider: provider)
    }

    /// Sets the member's uncompressed size to `declared` in its local header (offset 22)
    /// and its central directory record (offset 24).
    static func lie(_ path: String, _ declared: UInt32) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        func u32(_ at: Int) -> UInt32 { (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) } }
        func put(_ at: Int, _ v: UInt32) { for k in 0..<4 { bytes[at + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(k))) } }
        struct NotAZip: Error {}
        guard u32(0) == 0x0403_4B50, let eocd = stride(from: bytes.count - 22, through: 0, by: -1).first(where: { u32($0) == 0x0605_4B50 }) else { throw NotAZip() }
        let directory = Int(u32(eocd + 16))
        guard u32(directory) == 0x0201_4B50 else { throw NotAZip() }
        put(22, declared)
        put(directory + 24, declared)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}
