import Foundation

/// An export.zip's directory checked before ZIPFoundation reads it: every offset and size it
/// declares lies inside the file. That covers the end record's, the zip64 end record's and
/// each member's, zip64 fields included. ZIPFoundation converts some of them to `off_t` and
/// `Int64` unchecked (`Data.readStruct`, `Archive.readCompressed`), so a value past 2^63 in
/// a crafted file would stop the process; here it is a `corrupt_zip` naming what and where.
enum ZipDirectoryCheck {
    /// The largest central directory read (an export's holds a few thousand members, well under it).
    static let maxDirectoryBytes: UInt64 = 64 << 20

    static func check(_ path: String) throws {
        guard let file = FileHandle(forReadingAtPath: path) else { throw ImportError(.notFound, "\(path) cannot be opened") }
        defer { try? file.close() }
        let size = try file.seekToEnd()
        func corrupt(_ what: String) -> ImportError {
            ImportError(.corruptZip, "\(path) is not a readable zip archive: \(what) (the file has \(size) bytes)")
        }
        func read(_ at: UInt64, _ count: Int) throws -> [UInt8] {
            guard at <= size, UInt64(count) <= size - at else { throw corrupt("a record at byte \(at) runs past the end of the file") }
            try file.seek(toOffset: at)
            let data = try file.read(upToCount: count) ?? Data()
            guard data.count == count else { throw corrupt("a record at byte \(at) is cut short") }
            return [UInt8](data)
        }
        // The end record: the last 22 bytes and a comment of at most 65,535 after it.
        let tailStart = size > 65_557 ? size - 65_557 : 0
        let tail = try read(tailStart, Int(size - tailStart))
        guard tail.count >= 22, let end = stride(from: tail.count - 22, through: 0, by: -1).first(where: { u32(tail, $0) == 0x0605_4B50 }) else {
            throw corrupt("no end of central directory record")
        }
        var entries = UInt64(u16(tail, end + 10)), directorySize = UInt64(u32(tail, end + 12)), directoryOffset = UInt64(u32(tail, end + 16))
        // A zip64 locator just before it names the zip64 end record, whose values replace those.
        if end >= 20, u32(tail, end - 20) == 0x0706_4B50 {
            let at = u64(tail, end - 12)
            let record = try read(at, 56)
            guard u32(record, 0) == 0x0606_4B50 else { throw corrupt("the zip64 end record at byte \(at) is not one") }
            (entries, directorySize, directoryOffset) = (u64(record, 32), u64(record, 40), u64(record, 48))
        }
        guard directoryOffset <= size, directorySize <= size - directoryOffset else {
            throw corrupt("the central directory (\(directorySize) bytes at byte \(directoryOffset)) lies past the end of the file")
        }
        guard directorySize <= maxDirectoryBytes else { throw corrupt("a central directory of \(directorySize) bytes, more than an export's") }
        let directory = try read(directoryOffset, Int(directorySize))
        var i = 0, seen: UInt64 = 0
        while i + 46 <= directory.count, u32(directory, i) == 0x0201_4B50 {
            let nameLength = Int(u16(directory, i + 28)), extraLength = Int(u16(directory, i + 30)), commentLength = Int(u16(directory, i + 32))
            var compressed = UInt64(u32(directory, i + 20)), uncompressed = UInt64(u32(directory, i + 24)), local = UInt64(u32(directory, i + 42))
            let next = i + 46 + nameLength + extraLength + commentLength
            guard next <= directory.count else { throw corrupt("member \(seen + 1)'s directory record runs past the directory") }
            // Its zip64 extra field (id 1): 64-bit values for those whose 32-bit field is all ones, in this order.
            var e = i + 46 + nameLength
            let extraEnd = e + extraLength
            while e + 4 <= extraEnd {
                let id = u16(directory, e), length = Int(u16(directory, e + 2))
                var v = e + 4
                let fieldEnd = min(v + length, extraEnd)
                if id == 1 {
                    for field in [0, 1, 2] {
                        let marked = [uncompressed, compressed, local][field] == 0xFFFF_FFFF
                        guard marked, v + 8 <= fieldEnd else { continue }
                        let value = u64(directory, v)
                        if field == 0 { uncompressed = value } else if field == 1 { compressed = value } else { local = value }
                        v += 8
                    }
                }
                e += 4 + length
            }
            guard local < size else { throw corrupt("member \(seen + 1)'s data is said to start at byte \(local), past the end of the file") }
            guard compressed <= size - local else { throw corrupt("member \(seen + 1)'s \(compressed) compressed bytes at byte \(local) run past the end of the file") }
            guard uncompressed <= UInt64(Int64.max) else { throw corrupt("member \(seen + 1) declares \(uncompressed) bytes uncompressed") }
            seen += 1
            i = next
        }
        guard seen == entries else { throw corrupt("the end record counts \(entries) members and the central directory holds \(seen)") }
    }

    private static func u16(_ b: [UInt8], _ at: Int) -> UInt16 { UInt16(b[at]) | UInt16(b[at + 1]) << 8 }
    private static func u32(_ b: [UInt8], _ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[at + $1]) << (8 * UInt32($1)) } }
    private static func u64(_ b: [UInt8], _ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(b[at + $1]) << (8 * UInt64($1)) } }
}
