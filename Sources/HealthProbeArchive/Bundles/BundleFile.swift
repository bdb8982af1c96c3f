import Foundation
#if canImport(Glibc)
import Glibc
#endif
import GRDB
import HealthProbeCanonical

/// A bundle in line form on disk (Protocol/bundles.md section 2): written
/// while it is built, read back line by line; never held whole in memory.
public enum BundleFile {
    public struct Written: Sendable {
        public var header: BundleHeader
        public var trailer: BundleTrailer
        public var manifestHash: String
        /// Bytes written, newlines included.
        public var size: Int
    }

    /// Builds the bundle of `observationID` into `path`.
    public static func write(_ db: Database, observationID: Int64, previousManifestHash: String?, to path: String) throws -> Written {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: path) else { throw ArchiveError(.storage, "cannot write \(path)") }
        defer { try? handle.close() }
        var buffer = Data()
        var size = 0
        func line(_ bytes: [UInt8]) throws {
            buffer.append(contentsOf: bytes)
            buffer.append(0x0A)
            size += bytes.count + 1
            if buffer.count > 1 << 20 { try handle.write(contentsOf: buffer); buffer.removeAll(keepingCapacity: true) }
        }
        let (header, trailer, hash) = try ObservationBundleBuilder.build(db, observationID: observationID, previousManifestHash: previousManifestHash,
                                                                         onHeader: { try line(CanonicalJSON.encode($0.json)) }) { _, bytes, _ in try line(bytes) }
        try line(CanonicalJSON.encode(trailer.json))
        try handle.write(contentsOf: buffer)
        return Written(header: header, trailer: trailer, manifestHash: hash, size: size)
    }

    /// Verifies the bundle in `path` from its bytes (see `BundleVerifier.finish`).
    public static func verify(_ path: String, expected: String?, previousManifestHash: String?? = .none) throws -> (BundleHeader, BundleVerifier) {
        try verify(lines: try FileLines(path: path), expected: expected, previousManifestHash: previousManifestHash)
    }

    /// Verifies a bundle given as its lines (see `BundleVerifier.finish`).
    public static func verify(lines: some Sequence<[UInt8]>, expected: String?, previousManifestHash: String?? = .none) throws -> (BundleHeader, BundleVerifier) {
        var verifier = BundleVerifier()
        try verifier.feed(all: lines)
        let header = try verifier.finish(expected: expected, previousManifestHash: previousManifestHash)
        return (header, verifier)
    }
}

/// Lines of a file, read in chunks (the newline is not part of a line).
/// The chunk's buffer is read into again for each chunk (no allocation per chunk).
/// A read error ends the lines early, which a bundle's verification refuses as truncated.
public struct FileLines: Sequence, IteratorProtocol, LineEndReporting {
    let handle: FileHandle
    static let chunkSize = 1 << 20
    var chunk: [UInt8] = []
    /// Bytes of `chunk` read; the rest is stale.
    var filled = 0
    var index = 0
    var atEnd = false
    /// The file ended inside the last line returned (no newline after it).
    public private(set) var lastLineUnterminated = false

    public init(path: String) throws {
        guard let h = FileHandle(forReadingAtPath: path) else { throw ArchiveError(.notFound, "cannot read \(path)") }
        handle = h
    }

    public mutating func next() -> [UInt8]? {
        var line: [UInt8] = []
        while true {
            if index >= filled {
                if atEnd {
                    if line.isEmpty { return nil }
                    lastLineUnterminated = true
                    return line
                }
                if chunk.isEmpty { chunk = [UInt8](repeating: 0, count: Self.chunkSize) }
                let fd = handle.fileDescriptor
                var n: Int
                repeat {
                    n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                } while n < 0 && errno == EINTR
                guard n > 0 else { atEnd = true; continue }
                filled = n
                index = 0
            }
            if LineSplitter.take(from: chunk, end: filled, index: &index, into: &line) { return line }
        }
    }
}
