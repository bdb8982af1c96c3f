import Foundation
import HealthProbeArchive
import HealthProbeProtocol
import Crypto
#if canImport(Glibc)
import Glibc
#endif

/// Deflates bundle parts on a `ConsumerStage` and appends them to a file, while the
/// caller builds the next part. At most `depth` parts wait; part buffers are handed
/// back for reuse, so memory stays bounded by a few parts.
final class PartDeflater: Sendable {
    private let stage: ConsumerStage<[UInt8]>
    private let file: File

    /// The output file and what the stage's thread records.
    /// `@unchecked Sendable`: `parts`, `spare` and `offset` are read and written only under `lock`; `fd` is written by the stage's thread and closed under `lock` once it ended.
    private final class File: @unchecked Sendable {
        let lock = NSLock()
        var fd: Int32
        let path: String
        var parts: [OutboxBundle.Part] = []
        var spare: [[UInt8]] = []
        var offset = 0
        init(fd: Int32, path: String) { self.fd = fd; self.path = path }

        func close() {
            lock.withLock {
                if fd >= 0 { Glibc.close(fd); fd = -1 }
            }
        }

        func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
            var done = 0
            while done < bytes.count {
                let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw SyncProtocolError(.storage, "cannot write the outbox bundle \(path) (errno \(errno)); is the disk full?")
                }
                done += n
            }
        }
    }

    /// The build was stopped because no one takes its parts any more (`onPart` said so).
    struct Abandoned: Error, CustomStringConvertible {
        var description: String { "the bundle's build stopped: its parts are no longer being sent" }
    }

    /// Creates (or truncates) `path` and starts the deflating stage. `onPart` is told of each
    /// part once it is written (on the stage's thread, in order); returning false stops the build.
    init(path: String, depth: Int = 2, onPart: (@Sendable (OutboxBundle.Part) -> Bool)? = nil) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw SyncProtocolError(.storage, "cannot create the outbox bundle \(path) (errno \(errno))") }
        let file = File(fd: fd, path: path)
        self.file = file
        let compressor = BundlePartCodec.Compressor()
        var out: [UInt8] = []
        stage = ConsumerStage(name: "healthprobe.outbox.deflate", depth: depth) { part in
            let n = try part.withUnsafeBytes { try compressor.compress($0, into: &out) }
            let digest = out.withUnsafeBytes { Array(SHA256.hash(data: UnsafeRawBufferPointer(rebasing: $0[0..<n]))) }
            try out.withUnsafeBytes { try file.writeAll(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            let written = file.lock.withLock {
                let p = OutboxBundle.Part(offset: file.offset, compressedSize: n, size: part.count, sha256: digest)
                file.parts.append(p)
                file.offset += n
                if file.spare.count < depth { file.spare.append(part) }
                return p
            }
            if let onPart, !onPart(written) { throw Abandoned() }
        }
    }

    /// An empty part buffer (a reused one when available).
    func buffer() -> [UInt8] {
        var b = file.lock.withLock { file.spare.popLast() } ?? []
        b.removeAll(keepingCapacity: true)
        b.reserveCapacity(BundlePartCodec.maxPartSize)
        return b
    }

    /// Queues `part` (whole lines) to be deflated and written; waits while
    /// `depth` parts are queued. Throws an earlier deflate or write failure.
    func submit(_ part: [UInt8]) throws { try stage.submit(part) }

    /// Waits until every queued part is written; returns the parts in order.
    func finish() throws -> [OutboxBundle.Part] {
        defer { file.close() }
        try stage.finish()
        return file.lock.withLock { file.parts }
    }

    /// Stops after the part in progress (when the build failed); idempotent.
    func cancel() {
        stage.cancel()
        file.close()
    }
}
