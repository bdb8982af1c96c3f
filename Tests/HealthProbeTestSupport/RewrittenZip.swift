import Foundation

/// A zip's members written again, byte for byte the same compressed data, in the layouts
/// other writers use: zip64 records (as an export past 4 GiB needs, and as some writers use
/// for every archive), and sizes in a data descriptor after each member's data (a writer that
/// streams, as the Health app's does). Lets a test read the same export through each layout.
public enum RewrittenZip {
    public enum Layout: String, CaseIterable, Sendable {
        /// Both sizes in zip64 extra fields (all ones in their 32-bit fields), and the offset of
        /// every member but the first (as if past 4 GiB), a zip64 end record and its locator
        /// before an end record of all ones.
        case zip64
        /// The same with the first member's offset, 0, in its zip64 field too (as writers that
        /// record every field of a zip64 member do).
        case zip64EveryField
        /// The first member's offset, 0, in its zip64 field beside its sizes though its 32-bit
        /// offset field says 0, not all ones: the field holds more than its record marks.
        case zip64ExtraValue
        /// Flag bit 3: zeros in the local header, the CRC and 32-bit sizes in a descriptor after the data.
        case descriptor
        /// Both: a local zip64 extra field of zeros, 64-bit sizes in the descriptor (as Info-ZIP streams).
        case zip64Descriptor
    }

    struct Member {
        var name: [UInt8]
        var method: UInt16
        var time: UInt16, date: UInt16
        var crc: UInt32
        var compressed: [UInt8]
        var uncompressed: UInt64
    }

    /// Writes a zip of one member, `name`, whose data is `data` as given (method 8: taken as
    /// deflate data whatever it holds), with `crc` and `uncompressed` as its record says.
    public static func writeOne(to path: String, name: String, data: [UInt8], crc: UInt32, uncompressed: UInt64, layout: Layout = .descriptor) throws {
        let m = Member(name: Array(name.utf8), method: 8, time: 0, date: 0x5821, crc: crc, compressed: data, uncompressed: uncompressed)
        try Data(bytes(of: [m], layout: layout)).write(to: URL(fileURLWithPath: path))
    }

    struct NotAZip: Error, CustomStringConvertible {
        let what: String
        var description: String { "not a zip this rewriter reads: \(what)" }
    }

    /// Reads the zip at `source` (no zip64, no descriptors: as ZIPFoundation writes small
    /// archives) and writes its members to `target` in `layout`.
    public static func rewrite(_ source: String, to target: String, layout: Layout) throws {
        try Data(bytes(of: try members(source), layout: layout)).write(to: URL(fileURLWithPath: target))
    }

    static func members(_ path: String) throws -> [Member] {
        let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        guard b.count >= 22, let end = stride(from: b.count - 22, through: 0, by: -1).first(where: { u32(b, $0) == 0x0605_4B50 }) else {
            throw NotAZip(what: "no end record")
        }
        var members: [Member] = []
        var p = Int(u32(b, end + 16))
        for _ in 0..<Int(u16(b, end + 10)) {
            guard u32(b, p) == 0x0201_4B50 else { throw NotAZip(what: "no directory record at \(p)") }
            let nameLength = Int(u16(b, p + 28)), extraLength = Int(u16(b, p + 30)), commentLength = Int(u16(b, p + 32))
            let local = Int(u32(b, p + 42)), size = Int(u32(b, p + 20))
            guard u32(b, local) == 0x0403_4B50, u16(b, local + 6) & 0x8 == 0 else { throw NotAZip(what: "member at \(local)") }
            let data = local + 30 + Int(u16(b, local + 26)) + Int(u16(b, local + 28))
            members.append(Member(name: Array(b[(p + 46)..<(p + 46 + nameLength)]), method: u16(b, p + 10), time: u16(b, p + 12), date: u16(b, p + 14),
                                  crc: u32(b, p + 16), compressed: Array(b[data..<(data + size)]), uncompressed: UInt64(u32(b, p + 24))))
            p += 46 + nameLength + extraLength + commentLength
        }
        return members
    }

    static func bytes(of members: [Member], layout: Layout) -> [UInt8] {
        let zip64 = layout != .descriptor, streamed = layout == .descriptor || layout == .zip64Descriptor
        let flags: UInt16 = streamed ? 0x8 : 0
        let version: UInt16 = zip64 ? 45 : 20
        var out: [UInt8] = [], directory: [UInt8] = []
        for m in members {
            let offset = UInt64(out.count)
            // The local header.
            out += le(0x0403_4B50, 4) + le(UInt64(version), 2) + le(UInt64(flags), 2) + le(UInt64(m.method), 2) + le(UInt64(m.time), 2) + le(UInt64(m.date), 2)
            switch layout {
            case .zip64, .zip64EveryField, .zip64ExtraValue:
                out += le(UInt64(m.crc), 4) + le(0xFFFF_FFFF, 4) + le(0xFFFF_FFFF, 4) + le(UInt64(m.name.count), 2) + le(20, 2) + m.name
                out += le(1, 2) + le(16, 2) + le(m.uncompressed, 8) + le(UInt64(m.compressed.count), 8)
            case .descriptor:
                out += le(0, 4) + le(0, 4) + le(0, 4) + le(UInt64(m.name.count), 2) + le(0, 2) + m.name
            case .zip64Descriptor:
                out += le(0, 4) + le(0xFFFF_FFFF, 4) + le(0xFFFF_FFFF, 4) + le(UInt64(m.name.count), 2) + le(20, 2) + m.name
                out += le(1, 2) + le(16, 2) + le(0, 8) + le(0, 8)
            }
            out += m.compressed
            // The data descriptor, with its optional signature.
            if streamed {
                out += le(0x0807_4B50, 4) + le(UInt64(m.crc), 4)
                out += zip64 ? le(UInt64(m.compressed.count), 8) + le(m.uncompressed, 8) : le(UInt64(m.compressed.count), 4) + le(m.uncompressed, 4)
            }
            // Its directory record.
            directory += le(0x0201_4B50, 4) + le(0x0300 | UInt64(version), 2) + le(UInt64(version), 2) + le(UInt64(flags), 2) + le(UInt64(m.method), 2)
            directory += le(UInt64(m.time), 2) + le(UInt64(m.date), 2) + le(UInt64(m.crc), 4)
            if zip64 {
                let offsetInField = offset > 0 || layout == .zip64EveryField || layout == .zip64ExtraValue
                let offsetMarked = offset > 0 || layout == .zip64EveryField
                directory += le(0xFFFF_FFFF, 4) + le(0xFFFF_FFFF, 4) + le(UInt64(m.name.count), 2) + le(offsetInField ? 28 : 20, 2) + le(0, 2) + le(0, 2) + le(0, 2)
                directory += le(0o100644 << 16, 4) + le(offsetMarked ? 0xFFFF_FFFF : offset, 4) + m.name
                directory += le(1, 2) + le(offsetInField ? 24 : 16, 2) + le(m.uncompressed, 8) + le(UInt64(m.compressed.count), 8) + (offsetInField ? le(offset, 8) : [])
            } else {
                directory += le(UInt64(m.compressed.count), 4) + le(m.uncompressed, 4) + le(UInt64(m.name.count), 2) + le(0, 2) + le(0, 2) + le(0, 2) + le(0, 2)
                directory += le(0o100644 << 16, 4) + le(offset, 4) + m.name
            }
        }
        let directoryOffset = UInt64(out.count), count = UInt64(members.count)
        out += directory
        if zip64 {
            let record = UInt64(out.count)
            out += le(0x0606_4B50, 4) + le(44, 8) + le(0x0300 | 45, 2) + le(45, 2) + le(0, 4) + le(0, 4)
            out += le(count, 8) + le(count, 8) + le(UInt64(directory.count), 8) + le(directoryOffset, 8)
            out += le(0x0706_4B50, 4) + le(0, 4) + le(record, 8) + le(1, 4)
            out += le(0x0605_4B50, 4) + le(0, 2) + le(0, 2) + le(0xFFFF, 2) + le(0xFFFF, 2) + le(0xFFFF_FFFF, 4) + le(0xFFFF_FFFF, 4) + le(0, 2)
        } else {
            out += le(0x0605_4B50, 4) + le(0, 2) + le(0, 2) + le(count, 2) + le(count, 2) + le(UInt64(directory.count), 4) + le(directoryOffset, 4) + le(0, 2)
        }
        return out
    }

    static func le(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
    static func u16(_ b: [UInt8], _ at: Int) -> UInt16 { UInt16(b[at]) | UInt16(b[at + 1]) << 8 }
    static func u32(_ b: [UInt8], _ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[at + $1]) << (8 * UInt32($1)) } }
}
