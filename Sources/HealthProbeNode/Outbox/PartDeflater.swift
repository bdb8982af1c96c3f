import Foundation
import HealthProbeProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Deflates bundle parts on its own thread and appends them to a file, while
/// the caller builds the next part. At most `depth` parts wait; part buffers
/// are handed back for reuse, so memory stays bounded by a few parts.
final class PartDeflater: @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [[UInt8]] = []
    private var spare: [[UInt8]] = []
    private var parts: [OutboxBundle.Part] = []
    private var failure: (any Error)?
    private var closed = false
    private var finished = false
    private var fd: Int32
    private let path: String
    private let depth: Int

    /// Creates (or truncates) `path` and starts the deflating thread.
    init(path: String, depth: Int = 2) throws {
        self.path = path
        self.depth = depth
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw SyncProtocolError(.storage, "cannot create the outbox bundle \(path) (errno \(errno))") }
        Thread.detachNewThread { [self] in run() }
    }

    /// An empty part buffer (a reused one when available).
    func buffer() -> [UInt8] {
        condition.lock()
        var b = spare.popLast()
        condition.unlock()
        if b == nil { b = []; b!.reserveCapacity(BundlePartCodec.maxPartSize) }
        b!.removeAll(keepingCapacity: true)
        return b!
    }

    /// Queues `part` (whole lines) to be deflated and written; waits while
    /// `depth` parts are queued. Throws an earlier deflate or write failure.
    func submit(_ part: [UInt8]) throws {
        condition.lock()
        defer { condition.unlock() }
        while queue.count >= depth && failure == nil { condition.wait() }
        if let failure { throw failure }
        queue.append(part)
        condition.broadcast()
    }

    /// Waits until every queued part is written; returns the parts in order.
    func finish() throws -> [OutboxBundle.Part] {
        condition.lock()
        closed = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
        if fd >= 0 { close(fd); fd = -1 }
        if let failure { throw failure }
        return parts
    }

    /// Stops after the part in progress (when the build failed); idempotent.
    func cancel() {
        condition.lock()
        closed = true
        if failure == nil && !finished { failure = CancellationError() }
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
        if fd >= 0 { close(fd); fd = -1 }
    }

    private func run() {
        var out: [UInt8] = []
        var offset = 0
        let compressor = BundlePartCodec.Compressor()
        while true {
            condition.lock()
            while queue.isEmpty && !closed && failure == nil { condition.wait() }
            if failure != nil || queue.isEmpty {
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let part = queue.removeFirst()
            condition.broadcast()
            condition.unlock()
            do {
                let n = try part.withUnsafeBytes { try compressor.compress($0, into: &out) }
                try out.withUnsafeBytes { try writeAll(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                condition.lock()
                parts.append(OutboxBundle.Part(offset: offset, compressedSize: n, size: part.count))
                if spare.count < depth { spare.append(part) }
                condition.unlock()
                offset += n
            } catch {
                condition.lock()
                failure = error
                condition.broadcast()
                condition.unlock()
            }
        }
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
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
