#if canImport(HPDeflate)
import HPDeflate
#endif
import HPZlib
import HealthProbeCanonical
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A received bundle as the server keeps it: the parts as they arrived, each one
/// gzip member (RFC 1952) around the part's deflate data, unchanged. The file is
/// an ordinary multi-member gzip file (`zcat` prints the bundle's lines); each
/// member's header carries one extra subfield, `HP`, with the member's length in
/// bytes (4 bytes, little-endian), as BGZF's `BC` subfield does, so that a reader
/// takes a member whole without inflating it to find its end. Members written since
/// 2026-12-01 also record there what their data holds (`Recorded`), so that a restore
/// announces a kept bundle's parts from the headers alone
/// (docs/decisions/2026-12-01-kept-member-records.md).
/// Kept inflated, a million-sample bundle wrote 1.74 GB instead of 283 MB, and
/// new file pages cost this machine about 1.7 s of kernel time a gigabyte
/// (docs/decisions/2026-11-25-compressed-kept-bundles.md).
public enum GzipParts {
    /// ID1 ID2 CM FLG MTIME(4) XFL OS, XLEN(2), then the subfield: 'H' 'P' LEN(2) length(4):
    /// the header of members written before 2026-12-01, and the first bytes of every header.
    static let headerSize = 20
    /// The header `appendMember` writes: the subfield holds the length, then `Recorded`'s
    /// size (4), Adler-32 (4), LF count (4) and whether the data ends with an LF (1).
    static let recordingHeaderSize = headerSize + recordBytes
    static let recordBytes = 13
    /// CRC-32, then ISIZE (both little-endian).
    static let trailerSize = 8
    /// The longest member a reader takes: a part's frame at most, with the member's own bytes.
    public static let maxMemberSize = SyncFrame.maxLength + headerSize + trailerSize

    /// What a member's header records of its data (members written since 2026-12-01):
    /// enough to announce the member as a part, and the bundle's lines, without inflating it.
    /// A reader that inflates the member checks each against the data.
    public struct Recorded: Sendable, Equatable {
        /// The inflated data's size in bytes.
        public var size: Int
        /// The Adler-32 (RFC 1950) of the inflated data: the part's zlib trailer.
        public var adler: UInt32
        /// The LF bytes in the inflated data.
        public var newlines: Int
        /// Whether the data's last byte is an LF (the member ends at a line boundary).
        public var endsAtLine: Bool

        /// What `inflated` holds.
        public init(_ inflated: UnsafeRawBufferPointer, newlines: Int) {
            size = inflated.count
            adler = GzipParts.adler32(inflated)
            self.newlines = newlines
            endsAtLine = inflated.last == 0x0A
        }

        init(size: Int, adler: UInt32, newlines: Int, endsAtLine: Bool) {
            (self.size, self.adler, self.newlines, self.endsAtLine) = (size, adler, newlines, endsAtLine)
        }
    }

    /// Appends to `out` the member of one part: `zlib` is the part's zlib stream (RFC 1950)
    /// as received, which inflated without error to `inflated` (so it has the 2-byte
    /// header, no preset dictionary, and the 4-byte Adler-32 trailer, which the inflate
    /// checked and the header records); `newlines`: the LF bytes `inflated` holds.
    public static func appendMember(zlib: UnsafeRawBufferPointer, inflated: UnsafeRawBufferPointer, newlines: Int, to out: inout [UInt8]) throws {
        guard zlib.count >= 6 else { throw SyncProtocolError(.malformedFrame, "a part's zlib data is shorter than its header and trailer") }
        let deflate = UnsafeRawBufferPointer(rebasing: zlib[2..<(zlib.count - 4)])
        let total = recordingHeaderSize + deflate.count + trailerSize
        guard total <= maxMemberSize, inflated.count <= BundlePartCodec.maxPartSize else {
            throw SyncProtocolError(.inflateLimit, "a part is over the size a kept bundle holds")
        }
        let adler = (zlib.count - 4..<zlib.count).reduce(UInt32(0)) { $0 << 8 | UInt32(zlib[$1]) }
        func le32(_ v: UInt32) { for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * i))) } }
        out.append(contentsOf: Lines.recordingHeader)
        le32(UInt32(total))
        le32(UInt32(inflated.count))
        le32(adler)
        le32(UInt32(newlines))
        out.append(inflated.last == 0x0A ? 1 : 0)
        // One copy (appending a raw buffer would go byte by byte).
        let at = out.count
        out.resize(to: at + deflate.count)
        out.withUnsafeMutableBytes { UnsafeMutableRawBufferPointer(rebasing: $0[at...]).copyMemory(from: deflate) }
        le32(crc32(inflated))
        le32(UInt32(inflated.count))
    }

    /// The CRC-32 of gzip (ISO 3309) over `bytes`.
    static func crc32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return 0 }
        #if canImport(HPDeflate)
        return libdeflate_crc32(0, base, bytes.count)
        #else
        return UInt32(HPZlib.crc32(0, base.assumingMemoryBound(to: UInt8.self), uInt(bytes.count)))
        #endif
    }

    /// The Adler-32 (RFC 1950) over `bytes`.
    public static func adler32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return 1 }
        #if canImport(HPDeflate)
        return libdeflate_adler32(1, base, bytes.count)
        #else
        return UInt32(HPZlib.adler32(1, base.assumingMemoryBound(to: UInt8.self), uInt(bytes.count)))
        #endif
    }

    /// A member's deflate data as a part's zlib stream again (what `appendMember` took
    /// apart): the 2-byte header 0x78 0x01 (deflate, 32 KiB window, no dictionary), the
    /// data unchanged, and `adler`, the Adler-32 of what it inflates to, big-endian.
    public static func zlibStream(deflate: UnsafeRawBufferPointer, adler: UInt32) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: deflate.count + 6)
        out.withUnsafeMutableBytes { o in
            o[0] = 0x78
            o[1] = 0x01
            UnsafeMutableRawBufferPointer(rebasing: o[2..<(2 + deflate.count)]).copyMemory(from: deflate)
            for i in 0..<4 { o[2 + deflate.count + i] = UInt8(truncatingIfNeeded: adler >> (24 - 8 * i)) }
        }
        return out
    }

    /// A kept bundle file that is not what `appendMember` writes, or fails its checks.
    public struct ReadError: Error, CustomStringConvertible, Sendable {
        public let offset: Int
        public let reason: String
        public var description: String { "the kept bundle is damaged at byte \(offset): \(reason)" }
    }

    /// Whether the file at `path` starts as a gzip file does (else: a bundle kept inflated, as before).
    public static func isGzip(_ path: String) -> Bool {
        (try? Lines(path: path))?.startsAsGzip ?? false
    }

    /// The bundle's lines from a kept file, member by member: each member's length,
    /// sizes and CRC-32 are checked and its deflate data inflated into a buffer reused
    /// for the next (memory: two parts' worth). A line may run on into the next member.
    /// On damage the lines end (a bundle's verification then refuses it as truncated)
    /// and `failure` says where and what.
    /// `@unchecked Sendable`: an iterator used by one thread at a time (it moves whole to the thread reading it); `fd` and `library` are `let`.
    public final class Lines: Sequence, IteratorProtocol, LineEndReporting, @unchecked Sendable {
        private let fd: Int32
        private var offset = 0
        private var member: [UInt8] = []
        private var inflated: [UInt8] = []
        private var index = 0
        private var done = false
        /// The length of the member `readMember` read last (header and trailer included), and of its header.
        private var memberLength = 0
        private var memberHeaderLength = headerSize
        private let library: BundlePartCodec.Library
        #if canImport(HPDeflate)
        private let decompressor: OpaquePointer?
        #endif
        /// Why the lines ended early, if they did.
        public private(set) var failure: ReadError?
        /// The members ended inside the last line returned (no newline after it).
        public private(set) var lastLineUnterminated = false
        /// Whether the file starts as gzip does (`isGzip`), read through the same descriptor.
        public let startsAsGzip: Bool
        /// A member's first 16 bytes: ID1 ID2, CM deflate, FLG FEXTRA, MTIME 0, XFL 0, OS unknown, XLEN 8, subfield `HP` of 4 bytes
        /// (members written before 2026-12-01).
        static let header: [UInt8] = [0x1F, 0x8B, 8, 0x04, 0, 0, 0, 0, 0, 255, 8, 0, UInt8(ascii: "H"), UInt8(ascii: "P"), 4, 0]
        /// The same with XLEN 21 and a subfield of 17 bytes (the length, then `Recorded`): what `appendMember` writes.
        static let recordingHeader: [UInt8] = [0x1F, 0x8B, 8, 0x04, 0, 0, 0, 0, 0, 255, UInt8(4 + 4 + recordBytes), 0,
                                               UInt8(ascii: "H"), UInt8(ascii: "P"), UInt8(4 + recordBytes), 0]

        /// `library` inflates the members (libdeflate where linked; zlib is the fallback).
        public init(path: String, library: BundlePartCodec.Library = BundlePartCodec.library) throws {
            precondition(library.isAvailable, "\(library) is not linked in this build")
            self.library = library
            let fd = open(path, O_RDONLY)
            guard fd >= 0 else { throw SyncProtocolError(.storage, "cannot read the kept bundle \(path) (errno \(errno))") }
            self.fd = fd
            var magic: (UInt8, UInt8) = (0, 0)
            let n = withUnsafeMutableBytes(of: &magic) { pread(fd, $0.baseAddress, 2, 0) }
            startsAsGzip = n == 2 && magic == (0x1F, 0x8B)
            #if canImport(HPDeflate)
            decompressor = libdeflate_alloc_decompressor()
            #endif
        }

        deinit {
            close(fd)
            #if canImport(HPDeflate)
            if let decompressor { libdeflate_free_decompressor(decompressor) }
            #endif
        }

        public func next() -> [UInt8]? {
            var line: [UInt8] = []
            var partial = false
            while true {
                if index >= inflated.count {
                    if done {
                        if partial { lastLineUnterminated = true }
                        return partial ? line : nil
                    }
                    do {
                        if try !readMember() { done = true; continue }
                    } catch {
                        failure = error as? ReadError ?? ReadError(offset: offset, reason: "\(error)")
                        done = true
                        return nil
                    }
                    index = 0
                    continue
                }
                if LineSplitter.take(from: inflated, end: inflated.count, index: &index, into: &line) { return line }
                partial = true
            }
        }

        /// The record of the member `nextMember` last read, once checked against its inflated
        /// data; nil for a member without one, or one read without inflating.
        public private(set) var checkedRecord: Recorded?

        /// Member by member instead of line by line (never both on one reader): calls `body`
        /// with the next member's deflate data and, when `inflating`, what it inflated to
        /// (its size and CRC-32 checked; else an empty buffer, and only the member's
        /// length checked), both valid during the call; nil after the last member.
        public func nextMember<R>(inflating: Bool = true, _ body: (_ deflate: UnsafeRawBufferPointer, _ inflated: UnsafeRawBufferPointer) throws -> R) throws -> R? {
            guard try readMember(inflating: inflating) else { return nil }
            let (total, header) = (memberLength, memberHeaderLength)
            return try member.withUnsafeBytes { m in
                let deflate = UnsafeRawBufferPointer(rebasing: m[header..<(total - trailerSize)])
                if !inflating { return try body(deflate, UnsafeRawBufferPointer(start: nil, count: 0)) }
                return try inflated.withUnsafeBytes { try body(deflate, $0) }
            }
        }

        /// Reads exactly `count` bytes into `member` from `at`; false at a clean end of file (nothing read).
        private func read(_ count: Int, at start: Int, into buffer: inout [UInt8], offsetInBuffer: Int) throws -> Bool {
            var got = 0
            while got < count {
                let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + offsetInBuffer + got, count - got, off_t(start + got)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    if got == 0 && n == 0 && offsetInBuffer == 0 { return false }
                    throw ReadError(offset: start + got, reason: n < 0 ? "read error (errno \(errno))" : "the file ends inside a member")
                }
                got += n
            }
            return true
        }

        /// What every member's header records, read from the headers alone (no member is
        /// inflated or checked against its data; a reader that inflates them does that);
        /// nil when a member predates the records. From the file's start, on a new reader.
        public func recordedMembers() throws -> [Recorded]? {
            precondition(offset == 0 && !done, "recordedMembers() reads a file from its start, on a new reader")
            var records: [Recorded] = []
            defer { done = true }
            var status = stat()
            guard fstat(fd, &status) == 0 else { throw ReadError(offset: 0, reason: "its size cannot be read (errno \(errno))") }
            let fileSize = Int(status.st_size)
            while let header = try readHeader() {
                guard let record = header.record else { return nil }
                let total = header.total
                // The data is not read: a member running past the end is found from the lengths.
                guard offset + total <= fileSize else { throw ReadError(offset: fileSize, reason: "the file ends inside a member") }
                records.append(record)
                offset += total
            }
            return records
        }

        /// A member's header, read at `offset` into `member`: the header's length, its record if it
        /// has one, and the member's length; nil at a clean end of the file.
        private func readHeader() throws -> (length: Int, record: Recorded?, total: Int)? {
            if member.count < recordingHeaderSize { member.resize(to: recordingHeaderSize) }
            guard try read(headerSize, at: offset, into: &member, offsetInBuffer: 0) else { return nil }
            // Every header byte is what `appendMember` writes (or wrote before records); the data is covered by the CRC-32 and the size.
            let recording = member[0..<16].elementsEqual(Self.recordingHeader)
            guard recording || member[0..<16].elementsEqual(Self.header) else {
                throw ReadError(offset: offset, reason: "not a member as the server writes them (gzip, FEXTRA with an HP subfield)")
            }
            let headerLength = recording ? recordingHeaderSize : headerSize
            let total = Int(le32(member, 16))
            guard total >= headerLength + trailerSize + 1, total <= maxMemberSize else {
                throw ReadError(offset: offset, reason: "a member length of \(total) bytes is out of range")
            }
            guard recording else { return (headerSize, nil, total) }
            _ = try read(recordBytes, at: offset + headerSize, into: &member, offsetInBuffer: headerSize)
            let size = Int(le32(member, 20)), newlines = Int(le32(member, 28)), ends = member[32]
            guard size <= BundlePartCodec.maxPartSize, newlines <= size, ends <= 1, ends == 0 || newlines >= 1 else {
                throw ReadError(offset: offset, reason: "a member's header records \(size) bytes holding \(newlines) lines (end flag \(ends)): out of range")
            }
            return (headerLength, Recorded(size: size, adler: le32(member, 24), newlines: newlines, endsAtLine: ends == 1), total)
        }

        /// The next member inflated into `inflated` (read only, when not `inflating`); false at the end of the file.
        /// Inflated, its data is checked against its CRC-32, its size and what its header records.
        private func readMember(inflating: Bool = true) throws -> Bool {
            checkedRecord = nil
            guard let (headerLength, record, total) = try readHeader() else { return false }
            // Grown to the largest member so far (its first bytes, the header, kept).
            if member.count < total { member.resize(to: total) }
            _ = try read(total - headerLength, at: offset + headerLength, into: &member, offsetInBuffer: headerLength)
            let crc = le32(member, total - 8), size = Int(le32(member, total - 4))
            guard size <= BundlePartCodec.maxPartSize else {
                throw ReadError(offset: offset, reason: "a member declares \(size) bytes, over the part limit")
            }
            (memberLength, memberHeaderLength) = (total, headerLength)
            guard inflating else {
                offset += total
                return true
            }
            inflated.resize(to: size)
            let ok = member.withUnsafeBytes { m in
                inflated.withUnsafeMutableBytes { o in inflate(UnsafeRawBufferPointer(rebasing: m[headerLength..<(total - trailerSize)]), into: o) }
            }
            guard ok else { throw ReadError(offset: offset, reason: "a member's deflate data is corrupt or does not inflate to its declared \(size) bytes") }
            guard inflated.withUnsafeBytes({ GzipParts.crc32($0) }) == crc else {
                throw ReadError(offset: offset, reason: "a member's CRC-32 does not match its data")
            }
            if let record, record != inflated.withUnsafeBytes({ Recorded($0, newlines: LineSplitter.newlines(in: $0.bindMemory(to: UInt8.self))) }) {
                throw ReadError(offset: offset, reason: "a member's header records a size, Adler-32 or line count its data does not have")
            }
            checkedRecord = record
            offset += total
            return true
        }

        private func le32(_ b: [UInt8], _ at: Int) -> UInt32 {
            UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
        }

        /// Inflates raw deflate data to exactly `out.count` bytes.
        private func inflate(_ data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
            #if canImport(HPDeflate)
            if library == .libdeflate {
                guard let decompressor else { return false }
                var consumed = 0, produced = 0
                let rc = libdeflate_deflate_decompress_ex(decompressor, data.baseAddress, data.count, out.baseAddress, out.count, &consumed, &produced)
                return rc == LIBDEFLATE_SUCCESS && produced == out.count && consumed == data.count
            }
            #endif
            guard let r = ZlibInflate.run(data, into: out, windowBits: -15) else { return false }
            return r.code == Z_STREAM_END && r.produced == out.count && r.consumed == data.count
        }
    }
}
