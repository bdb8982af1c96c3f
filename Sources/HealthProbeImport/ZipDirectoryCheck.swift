import Foundation

/// An export.zip's directory checked before ZIPFoundation reads it, found as ZIPFoundation
/// finds it: the last end record, the zip64 end record right before its locator (when that
/// says version 4.5 or later), then as many members as the end record counts, read one after
/// another from the directory's start. Every offset and size those declare must lie inside
/// the file, zip64 fields included, and a stored member's data too. ZIPFoundation converts
/// some of them to `off_t` and `Int64` unchecked (`Data.readStruct`, `Archive.makeIterator`,
/// `Archive.readCompressed`), so a value past 2^63 in a crafted file would stop the process;
/// here it is a `corrupt_zip` naming what and where.
enum ZipDirectoryCheck {
    /// More members than an export holds by far; a directory that counts more is refused.
    static let maxMembers: UInt64 = 10_000_000

    /// Checks the zip at `path`; returns its members' data, in the order ZIPFoundation lists them
    /// (where it stops listing, the list ends too).
    @discardableResult
    static func check(_ path: String) throws -> [ZipMemberData] {
        guard let file = FileHandle(forReadingAtPath: path) else { throw ImportError(.notFound, "\(path) cannot be opened") }
        defer { try? file.close() }
        let size = try file.seekToEnd()
        func corrupt(_ what: String) -> ImportError {
            ImportError(.corruptZip, "\(path) is not a readable zip archive: \(what) (the file has \(size) bytes)")
        }
        /// `count` bytes at `at`, or nil past the end of the file (ZIPFoundation then reads nothing there).
        func read(_ at: UInt64, _ count: Int) throws -> [UInt8]? {
            guard at <= size, UInt64(count) <= size - at else { return nil }
            try file.seek(toOffset: at)
            let data = try file.read(upToCount: count) ?? Data()
            return data.count == count ? [UInt8](data) : nil
        }
        // The end record: the last 22 bytes and a comment of at most 65,535 after it.
        let tailStart = size > 65_557 ? size - 65_557 : 0
        guard let tail = try read(tailStart, Int(size - tailStart)), tail.count >= 22,
              let endIndex = stride(from: tail.count - 22, through: 0, by: -1).first(where: { u32(tail, $0) == 0x0605_4B50 }) else {
            throw corrupt("no end of central directory record")
        }
        let end = tailStart + UInt64(endIndex)
        var entries = UInt64(u16(tail, endIndex + 10)), directoryOffset = UInt64(u32(tail, endIndex + 16))
        // The zip64 end record ZIPFoundation uses: 56 bytes right before a locator right before the end record.
        if end > 20, end - 20 > 56, let locator = try read(end - 20, 20), u32(locator, 0) == 0x0706_4B50,
           let record = try read(end - 76, 56), u32(record, 0) == 0x0606_4B50, u16(record, 14) >= 45 {
            (entries, directoryOffset) = (u64(record, 32), u64(record, 48))
        }
        guard directoryOffset < size || entries == 0 else {
            throw corrupt("the central directory is said to start at byte \(directoryOffset), past the end of the file")
        }
        guard entries <= maxMembers else { throw corrupt("the end record counts \(entries) members, more than an export's") }
        var position = directoryOffset
        var members: [ZipMemberData] = []
        for n in stride(from: 1, through: entries, by: 1) {
            // Where ZIPFoundation finds no member record, it stops reading members.
            guard let head = try read(position, 46), u32(head, 0) == 0x0201_4B50 else { break }
            let method = u16(head, 10)
            let nameLength = Int(u16(head, 28)), extraLength = Int(u16(head, 30)), commentLength = Int(u16(head, 32))
            var compressed = UInt64(u32(head, 20)), uncompressed = UInt64(u32(head, 24)), local = UInt64(u32(head, 42))
            guard let rest = try read(position + 46, nameLength + extraLength + commentLength) else { break }
            // Its zip64 extra field (id 1), read as ZIPFoundation reads it: the first field with that
            // id, taken only when it holds exactly the 64-bit values of the fields that are all ones
            // (and the disk's, 4 bytes, when that is 0xFFFF), in order; a value of 0 counts as absent.
            let ones = [uncompressed, compressed, local].map { $0 == 0xFFFF_FFFF }
            let wanted = 8 * ones.filter { $0 }.count + (u16(head, 34) == 0xFFFF ? 4 : 0)
            var e = nameLength
            let extraEnd = nameLength + extraLength
            while e + 4 < extraEnd {
                let id = u16(rest, e), length = Int(u16(rest, e + 2))
                guard e + 4 + length <= extraEnd else { break }
                if id == 1 {
                    if length == wanted {
                        var v = e + 4
                        for field in 0..<3 where ones[field] {
                            let value = u64(rest, v)
                            v += 8
                            guard value > 0 else { continue }
                            if field == 0 { uncompressed = value } else if field == 1 { compressed = value } else { local = value }
                        }
                    }
                    break
                }
                e += 4 + length
            }
            // An offset of all ones left so: ZIPFoundation reads the member at byte 4,294,967,295 and,
            // finding none there, no member from there on: the export would seem not to be there.
            if ones[2] && local == 0xFFFF_FFFF, try read(local, 4).map({ u32($0, 0) }) != 0x0403_4B50 {
                throw ImportError(.corruptZip, "\(path): member \(n) gives its offset in a zip64 field the zip reader used here cannot take (as 0, or in a field "
                                  + "not holding exactly the values its record marks), so it would find no member from there on; unzip the archive and import the apple_health_export folder instead")
            }
            guard local < size else { throw corrupt("member \(n)'s data is said to start at byte \(local), past the end of the file") }
            // A size of all ones that no zip64 value replaced stays as ZIPFoundation reads it (a 32-bit
            // value cannot trap): it inflates a deflated member to the end of its stream all the same.
            let unreplaced = [ones[0] && uncompressed == 0xFFFF_FFFF, ones[1] && compressed == 0xFFFF_FFFF]
            guard compressed <= size - local || unreplaced[1] else { throw corrupt("member \(n)'s \(compressed) compressed bytes at byte \(local) run past the end of the file") }
            // A stored member's data is its uncompressed bytes: they lie in the file too. ZIPFoundation
            // reads a member by its local header's method: stored there, it is read as stored (a
            // size far past the file would have it read nothing for as long).
            let localMethod = try read(local + 8, 2).map { u16($0, 0) }
            guard (method != 0 && localMethod != 0) || uncompressed <= size - local || unreplaced[0] else { throw corrupt("member \(n), stored, declares \(uncompressed) bytes at byte \(local), past the end of the file") }
            guard uncompressed <= UInt64(Int64.max) else { throw corrupt("member \(n) declares \(uncompressed) bytes uncompressed") }
            position += 46 + UInt64(nameLength + extraLength + commentLength)
            // Its data, after its local header (where ZIPFoundation finds none, it lists no more members).
            guard let header = try read(local, 30), u32(header, 0) == 0x0403_4B50 else { break }
            members.append(ZipMemberData(dataOffset: local + 30 + UInt64(u16(header, 26)) + UInt64(u16(header, 28)),
                                         size: u16(header, 8) == 0 ? uncompressed : compressed, method: u16(header, 8)))
        }
        return members
    }

    private static func u16(_ b: [UInt8], _ at: Int) -> UInt16 { UInt16(b[at]) | UInt16(b[at + 1]) << 8 }
    private static func u32(_ b: [UInt8], _ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[at + $1]) << (8 * UInt32($1)) } }
    private static func u64(_ b: [UInt8], _ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(b[at + $1]) << (8 * UInt64($1)) } }
}
