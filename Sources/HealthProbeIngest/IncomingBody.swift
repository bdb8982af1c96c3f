import Crypto
import Foundation
import HealthProbeCanonical
import NIOCore
import NIOFileSystem

/// A posted body as it arrives: each chunk is written to a file of its own in the
/// automation's body directory (`.incoming-<uuid>`) and hashed, so memory holds one
/// chunk, never the body. `BodyStore.adopt` syncs it to disk and renames it to its
/// content address (the sync is not part of the time a poster has to send the body). A body that does not arrive whole (too
/// large, too slow, the connection gone) leaves no file behind.
public struct IncomingBody: Sendable {
    /// The file holding the bytes (synced), their SHA-256 and their count.
    public let path: String
    public let sha256: String
    public let bytes: Int

    /// More than the limit arrived.
    public struct TooLarge: Error {}

    /// The name prefix of bodies still arriving; `BodyStore.sweepIncoming` removes what a stop left.
    static let prefix = ".incoming-"

    /// Receives `chunks` into a new file in `directory`, at most `limit` bytes.
    public static func receive<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, into directory: String, limit: Int) async throws -> IncomingBody
    where Chunks.Element == ByteBuffer {
        try await FileSystem.shared.createDirectory(at: FilePath(directory), withIntermediateDirectories: true, permissions: [.ownerReadWriteExecute])
        let path = directory + "/" + prefix + UUID().uuidString
        do {
            let (sha, count) = try await FileSystem.shared.withFileHandle(
                forWritingAt: FilePath(path), options: .newFile(replaceExisting: false, permissions: [.ownerRead, .ownerWrite])
            ) { handle in
                var hash = SHA256()
                var count = 0
                var writer = handle.bufferedWriter(capacity: .mebibytes(1))
                for try await chunk in chunks {
                    count += chunk.readableBytes
                    guard count <= limit else { throw TooLarge() }
                    chunk.withUnsafeReadableBytes { hash.update(bufferPointer: $0) }
                    try await writer.write(contentsOf: chunk)
                }
                try await writer.flush()
                return (ArchiveHasher.hex(Array(hash.finalize())), count)
            }
            return IncomingBody(path: path, sha256: sha, bytes: count)
        } catch {
            _ = try? await FileSystem.shared.removeItem(at: FilePath(path))
            throw error
        }
    }

    /// `bytes` already in memory, kept the same way (the benchmark, tests).
    public static func write(_ bytes: [UInt8], into directory: String) async throws -> IncomingBody {
        try await receive(OneBuffer(buffer: ByteBuffer(bytes: bytes)), into: directory, limit: .max)
    }

    /// One buffer as a sequence of chunks.
    struct OneBuffer: AsyncSequence, Sendable {
        let buffer: ByteBuffer
        struct AsyncIterator: AsyncIteratorProtocol {
            var buffer: ByteBuffer?
            mutating func next() async -> ByteBuffer? { defer { buffer = nil }; return buffer }
        }
        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(buffer: buffer) }
    }
}
