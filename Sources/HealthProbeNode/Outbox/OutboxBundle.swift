import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeProtocol
import HealthProbeCanonical
import Crypto
#if canImport(Glibc)
import Glibc
#endif

/// The node's outbox form of a bundle: built straight into deflated parts
/// (whole lines, at most `BundlePartCodec.maxPartSize` bytes each before
/// deflating), stored back to back in one file, sent as they are. A second
/// thread deflates and writes each part while the next is built, and records
/// the SHA-256 of the bytes it wrote; each part read back to be sent must match
/// it, so what leaves is what was written (docs/decisions/2026-11-25-outbox-part-hashes.md).
/// `rehash` checks a stored bundle whole (inflate, item hashes, manifest hash).
public enum OutboxBundle {
    /// One stored part: where its deflated bytes are, its size before deflating, and
    /// the SHA-256 of its deflated bytes as they were written (checked as it is read to be sent).
    public struct Part: Sendable, Equatable {
        public var offset: Int
        public var compressedSize: Int
        public var size: Int
        public var sha256: [UInt8]

        /// Whether `bytes` (the part as read back) are the bytes written.
        public func matches(_ bytes: UnsafeRawBufferPointer) -> Bool {
            Array(SHA256.hash(data: bytes)) == sha256
        }
    }

    public struct Written: Sendable {
        public var header: BundleHeader
        public var trailer: BundleTrailer
        public var manifestHash: String
        /// Bytes of the bundle's lines, newlines included (before deflating).
        public var size: Int
        public var parts: [Part]

        /// What `BUNDLE_BEGIN` (or a stream's `BUNDLE_STREAM_END`) declares of it, sent at `sequence`.
        public func declared(sequence: Int) -> BundleBegin {
            BundleBegin(sequence: sequence, manifestHash: manifestHash, parts: parts.count, itemCount: trailer.itemCount, uncompressedSize: size)
        }
    }

    /// Builds the bundle of `observationID` into `path` as deflated parts of at
    /// most `partSize` bytes (before deflating). `onPart` is told of each part once it is
    /// in the file (on another thread, in order), so that it can be sent while the next is
    /// built; returning false stops the build.
    public static func write(_ db: Database, observationID: Int64, previousManifestHash: String?, to path: String,
                             partSize: Int = BundlePartCodec.maxPartSize, onPart: (@Sendable (Part) -> Bool)? = nil) throws -> Written {
        precondition(partSize > 0 && partSize <= BundlePartCodec.maxPartSize)
        let deflater = try PartDeflater(path: path, onPart: onPart)
        defer { deflater.cancel() }
        var part = deflater.buffer()
        var size = 0
        func line(_ bytes: [UInt8]) throws {
            let length = bytes.count + 1
            guard length <= partSize else {
                throw SyncProtocolError(.frameTooLarge, "a bundle line of \(length) bytes is over the part limit")
            }
            if part.count + length > partSize {
                try deflater.submit(part)
                part = deflater.buffer()
            }
            part.append(contentsOf: bytes)
            part.append(0x0A)
            size += length
        }
        let (header, trailer, hash) = try ObservationBundleBuilder.build(db, observationID: observationID, previousManifestHash: previousManifestHash,
                                                                         onHeader: { try line(CanonicalJSON.encode($0.json)) }) { _, bytes, _ in try line(bytes) }
        try line(CanonicalJSON.encode(trailer.json))
        try deflater.submit(part)
        return Written(header: header, trailer: trailer, manifestHash: hash, size: size, parts: try deflater.finish())
    }

    /// Reads stored part `part` of the file open as `fd` (its deflated bytes) into `buffer`.
    public static func read(_ part: Part, fd: Int32, into buffer: inout [UInt8]) throws {
        // The buffer's capacity is reused: no multi-megabyte allocation per part.
        buffer.resize(to: part.compressedSize)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, part.compressedSize, off_t(part.offset)) }
        guard n == part.compressedSize else {
            throw SyncProtocolError(.storage, "cannot read a part of the outbox bundle (\(n) of \(part.compressedSize) bytes at \(part.offset))")
        }
    }

    /// Re-hashes the parts stored in `path`: inflates each (its size checked)
    /// and recomputes the manifest hash over the header line, every item's
    /// SHA-256 and the trailer line; it must equal `expected`.
    public static func rehash(_ path: String, parts: [Part], expected: String) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw SyncProtocolError(.storage, "cannot read the outbox bundle \(path) (errno \(errno))") }
        defer { close(fd) }
        var digest = SHA256Stream(domain: .manifest)
        var compressed: [UInt8] = []
        var data: [UInt8] = []
        var lines = 0
        for (index, part) in parts.enumerated() {
            try read(part, fd: fd, into: &compressed)
            try compressed.withUnsafeBytes { try BundlePartCodec.inflate($0, declaredSize: part.size, into: &data) }
            let lastPart = index == parts.count - 1
            try data.withUnsafeBytes { buf in
                guard buf.last == 0x0A else { throw BundleError(.malformed, line: nil, "part \(index) of the outbox bundle does not end with a whole line") }
                var start = 0
                while start < buf.count {
                    let p = memchr(buf.baseAddress! + start, 0x0A, buf.count - start)!
                    let end = buf.baseAddress!.distance(to: UnsafeRawPointer(p))
                    let line = UnsafeRawBufferPointer(rebasing: buf[start..<end])
                    lines += 1
                    if lines == 1 {
                        digest.update(bufferPointer: line)  // the header
                        digest.update([0x0A])
                    } else if lastPart && end + 1 == buf.count {
                        digest.update(bufferPointer: line)  // the trailer
                    } else {
                        var hex = ArchiveHasher.sha256(.item, buffer: line)
                        hex.withUTF8 { digest.update(bufferPointer: UnsafeRawBufferPointer($0)) }
                        digest.update([0x0A])
                    }
                    start = end + 1
                }
            }
        }
        guard lines >= 2 else { throw BundleError(.malformed, line: nil, "\(path) holds no header and trailer (truncated)") }
        let hash = digest.finalize()
        guard hash == expected else {
            throw BundleError(.manifestHash, line: nil, "the outbox bundle re-hashes to \(hash), not \(expected): it changed after it was built")
        }
    }
}
