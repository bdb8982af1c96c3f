import Foundation
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeProtocol
import Synchronization

/// A kept bundle cut into `RESTORE_PART`s (Protocol/README.md section 8): whole lines,
/// each part at most 8 MiB uncompressed, compressed with zlib. The first pass (`init`)
/// counts lines, bytes and parts for `RESTORE_BUNDLE`; `next()` reads the file again
/// and returns the parts in order, so memory holds one part, never the bundle.
///
/// A kept file of gzip members each ending at a line boundary (what a conforming
/// node's parts give) is sent member for member: each member's deflate data, kept as
/// the part arrived, goes out again as that part's zlib stream, with its Adler-32;
/// nothing is deflated again. Members written since 2026-12-01 record their size,
/// Adler-32 and lines in their headers: the first pass reads only the headers, so the
/// first part leaves at once, and the second pass inflates each member to check it
/// (CRC-32, size, record) before it is sent. Older members are inflated and checked by
/// the first pass, and the second only reads.
/// Any other file (a member ending inside a line, a bundle kept inflated) is cut anew
/// and each part deflated.
final class RestoreParts: Sendable {
    let path: String
    let parts: Int
    let lines: Int
    let size: Int
    /// Sent member for member: each member's uncompressed size and Adler-32; nil when cut anew.
    private let members: [(size: Int, adler: UInt32)]?
    /// Whether the first pass inflated and checked every member (else the second does, as it sends).
    private let membersChecked: Bool
    /// Where the second pass is, under one lock: a connection awaits each `next()` before
    /// the next, so it is never contended, but the calls run on different pool threads.
    private let cursor = Mutex(Cursor())

    private struct Cursor {
        var memberReader: GzipParts.Lines?
        var reader: StoredBundleLines?
        var carried: [UInt8]?
        var index = 0
        var buffer: [UInt8] = []
        var compressed: [UInt8] = []
        var compressor: BundlePartCodec.Compressor?
    }

    init(path: String) throws {
        self.path = path
        if let recorded = try Self.recordedMembers(path) {
            (lines, size, parts, members, membersChecked) = (recorded.lines, recorded.size, recorded.members.count, recorded.members, false)
            return
        }
        if let scan = try Self.scanMembers(path) {
            (lines, size, parts, members, membersChecked) = (scan.lines, scan.size, scan.members.count, scan.members, true)
            return
        }
        (members, membersChecked) = (nil, true)
        var lines = try StoredBundleLines(path: path)
        var (count, size, parts, inPart) = (0, 0, 0, 0)
        while let line = lines.next() {
            let n = line.count + 1
            guard n <= BundlePartCodec.maxPartSize else { throw Self.damaged(path, "line \(count + 1) is longer than a part (8 MiB)") }
            if inPart == 0 || inPart + n > BundlePartCodec.maxPartSize { parts += 1; inPart = 0 }
            inPart += n
            size += n
            count += 1
        }
        if let failure = lines.failure { throw Self.damaged(path, failure.description) }
        guard count >= 2, !lines.lastLineUnterminated else { throw Self.damaged(path, "it does not end with a whole trailer line") }
        (self.lines, self.size, self.parts) = (count, size, parts)
    }

    /// The first pass from the members' headers alone: lines, bytes, and each member's size and
    /// Adler-32 as its header records them; nil when the file is not gzip, a member predates the
    /// records, or one does not end at a line boundary.
    static func recordedMembers(_ path: String) throws -> (lines: Int, size: Int, members: [(size: Int, adler: UInt32)])? {
        let reader = try GzipParts.Lines(path: path)
        guard reader.startsAsGzip else { return nil }
        let records: [GzipParts.Recorded]?
        do { records = try reader.recordedMembers() } catch let e as GzipParts.ReadError { throw damaged(path, e.description) }
        guard let records, records.allSatisfy(\.endsAtLine) else { return nil }
        let lines = records.reduce(0) { $0 + $1.newlines }
        guard lines >= 2 else { throw damaged(path, "it does not end with a whole trailer line") }
        return (lines, records.reduce(0) { $0 + $1.size }, records.map { ($0.size, $0.adler) })
    }

    /// The first pass over a file of gzip members, each inflated: lines, bytes, and each member's size and
    /// Adler-32; nil when the file is not gzip or a member does not end at a line boundary.
    static func scanMembers(_ path: String) throws -> (lines: Int, size: Int, members: [(size: Int, adler: UInt32)])? {
        let reader = try GzipParts.Lines(path: path)
        guard reader.startsAsGzip else { return nil }
        var (lines, size) = (0, 0)
        var members: [(size: Int, adler: UInt32)] = []
        while true {
            let member: (newlines: Int, size: Int, adler: UInt32, whole: Bool)?
            do {
                member = try reader.nextMember { _, inflated in
                    (LineSplitter.newlines(in: inflated.bindMemory(to: UInt8.self)), inflated.count,
                     GzipParts.adler32(inflated), inflated.last == 0x0A)
                }
            } catch let e as GzipParts.ReadError {
                throw damaged(path, e.description)
            }
            guard let member else { break }
            guard member.whole else { return nil }
            lines += member.newlines
            size += member.size
            members.append((member.size, member.adler))
        }
        guard lines >= 2 else { throw damaged(path, "it does not end with a whole trailer line") }
        return (lines, size, members)
    }

    /// The next part: its index, uncompressed size and zlib bytes; nil after the last.
    func next() throws -> (index: Int, size: Int, zlib: [UInt8])? {
        let (path, parts, members, membersChecked) = (path, parts, members, membersChecked)
        return try cursor.withLock { c throws -> (index: Int, size: Int, zlib: [UInt8])? in
            if let members { return try Self.nextMember(&c, members, checking: !membersChecked, path: path) }
            if c.reader == nil { c.reader = try StoredBundleLines(path: path) }
            c.buffer.removeAll(keepingCapacity: true)
            if let line = c.carried { Self.append(line, to: &c.buffer); c.carried = nil }
            while let line = c.reader?.next() {
                if !c.buffer.isEmpty && c.buffer.count + line.count + 1 > BundlePartCodec.maxPartSize { c.carried = line; break }
                Self.append(line, to: &c.buffer)
            }
            guard !c.buffer.isEmpty else { return nil }
            guard c.index < parts else { throw Self.damaged(path, "it changed while it was sent") }
            if c.compressor == nil { c.compressor = BundlePartCodec.Compressor() }
            let buffer = c.buffer
            let n = try buffer.withUnsafeBytes { try c.compressor!.compress($0, into: &c.compressed) }
            defer { c.index += 1 }
            return (c.index, buffer.count, Array(c.compressed[0..<n]))
        }
    }

    /// The next member read as it is kept and sent as its part's zlib stream; `checking`, inflated
    /// first and checked (its CRC-32, size and record, and that the first pass saw the same).
    private static func nextMember(_ c: inout Cursor, _ members: [(size: Int, adler: UInt32)], checking: Bool, path: String) throws -> (index: Int, size: Int, zlib: [UInt8])? {
        if c.memberReader == nil { c.memberReader = try GzipParts.Lines(path: path) }
        let reader = c.memberReader!
        let read: [UInt8]??
        let index = c.index
        do {
            read = try reader.nextMember(inflating: checking) { deflate, inflated -> [UInt8]? in
                guard index < members.count else { return nil }
                if checking {
                    // A member's record was checked against its data as it was read; one without a record is checked here.
                    let (size, adler) = reader.checkedRecord.map { ($0.size, $0.adler) } ?? (inflated.count, GzipParts.adler32(inflated))
                    guard size == members[index].size, adler == members[index].adler else { return nil }
                }
                return GzipParts.zlibStream(deflate: deflate, adler: members[index].adler)
            }
        } catch let e as GzipParts.ReadError {
            throw Self.damaged(path, e.description)
        }
        guard let read else {
            guard index == members.count else { throw Self.damaged(path, "it changed while it was sent") }
            return nil
        }
        guard let zlib = read else { throw Self.damaged(path, "it changed while it was sent") }
        c.index += 1
        return (index, members[index].size, zlib)
    }

    private static func append(_ line: [UInt8], to buffer: inout [UInt8]) {
        buffer.append(contentsOf: line)
        buffer.append(0x0A)
    }

    static func damaged(_ path: String, _ why: String) -> SyncProtocolError {
        SyncProtocolError(.storage, "the server's kept bundle cannot be sent: \(why); an administrator runs `hp-server verify --full`")
    }
}
