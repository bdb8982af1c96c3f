import Foundation
import HealthProbeArchive
import HealthProbeProtocol

/// A kept bundle cut into `RESTORE_PART`s (Protocol/README.md section 8): whole lines,
/// each part at most 8 MiB uncompressed, compressed with zlib. The first pass (`init`)
/// counts lines, bytes and parts for `RESTORE_BUNDLE`; `next()` reads the file again
/// and returns the parts in order, so memory holds one part, never the bundle.
/// `@unchecked Sendable`: one connection's task uses it, one call at a time (each
/// `next()` is awaited before the next), on the blocking-I/O threads.
final class RestoreParts: @unchecked Sendable {
    let path: String
    let parts: Int
    let lines: Int
    let size: Int
    private var reader: StoredBundleLines?
    private var carried: [UInt8]?
    private var index = 0
    private var buffer: [UInt8] = []
    private var compressed: [UInt8] = []
    private let compressor = BundlePartCodec.Compressor()

    init(path: String) throws {
        self.path = path
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

    /// The next part: its index, uncompressed size and zlib bytes; nil after the last.
    func next() throws -> (index: Int, size: Int, zlib: [UInt8])? {
        if reader == nil { reader = try StoredBundleLines(path: path) }
        buffer.removeAll(keepingCapacity: true)
        if let line = carried { append(line); carried = nil }
        while let line = reader?.next() {
            if !buffer.isEmpty && buffer.count + line.count + 1 > BundlePartCodec.maxPartSize { carried = line; break }
            append(line)
        }
        guard !buffer.isEmpty else { return nil }
        guard index < parts else { throw Self.damaged(path, "it changed while it was sent") }
        let n = try buffer.withUnsafeBytes { try compressor.compress($0, into: &compressed) }
        defer { index += 1 }
        return (index, buffer.count, Array(compressed[0..<n]))
    }

    private func append(_ line: [UInt8]) {
        buffer.append(contentsOf: line)
        buffer.append(0x0A)
    }

    static func damaged(_ path: String, _ why: String) -> SyncProtocolError {
        SyncProtocolError(.storage, "the server's kept bundle cannot be sent: \(why); an administrator runs `hp-server verify --full`")
    }
}
