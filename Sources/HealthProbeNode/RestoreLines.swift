import Foundation
import Synchronization
import HealthProbeArchive
import HealthProbeCanonical
#if canImport(Glibc)
import Glibc
#endif

/// The lines of a bundle being restored, handed from the connection (which receives,
/// checks and inflates each `RESTORE_PART`) to the thread applying them, a part at a
/// time: the bundle is applied while it arrives, never held whole in memory or on disk.
/// A part moves as its inflated bytes (one buffer, given back to the system when freed)
/// and is cut into lines on the applying side, so at most `depth` parts wait.
/// The connection says whether the transfer ended whole (`finish`) before the applier's
/// transaction may commit (`checked`).
final class RestoreLines: Sendable {
    /// Inflated parts waiting for the applier (whole lines, each ending with a newline).
    let queue: BoundedQueue<[UInt8]>
    private let verdict = Mutex<(any Error)?>(SyncRestoreIncomplete())

    init(depth: Int = 2) { queue = BoundedQueue(capacity: depth) }

    /// Queues one inflated part (waits while `depth` parts wait); throws once the applier stopped.
    func put(_ part: [UInt8]) throws { try queue.put(part) }

    /// The transfer ended: whole (`failure` nil) or not.
    func finish(failure: (any Error)?) {
        verdict.withLock { $0 = failure }
        queue.close(failure: failure)
    }

    /// Throws unless the transfer ended whole.
    func checked() throws {
        if let e = verdict.withLock({ $0 }) { throw e }
    }

    /// The lines in order, without their newlines, for the applier (ends early when the transfer failed).
    var lines: Lines { Lines(queue: queue) }

    struct Lines: Sequence, IteratorProtocol {
        let queue: BoundedQueue<[UInt8]>
        var part: [UInt8] = []
        var start = 0

        mutating func next() -> [UInt8]? {
            while start >= part.count {
                guard let more = try? queue.take() else { return nil }
                (part, start) = (more, 0)
            }
            let from = start
            // Every part ends with a newline (checked as it arrived).
            let end = part.withUnsafeBufferPointer { buf in
                let p = memchr(buf.baseAddress! + from, 0x0A, buf.count - from)
                return p.map { buf.baseAddress!.distance(to: $0.assumingMemoryBound(to: UInt8.self)) } ?? buf.count
            }
            start = end + 1
            return Array(part[from..<end])
        }
    }

    /// How many newlines `part` holds.
    static func lineCount(_ part: [UInt8]) -> Int {
        part.withUnsafeBufferPointer { LineSplitter.newlines(in: $0) }
    }

    /// The first line of `part`, without its newline (the whole part when it holds none).
    static func firstLine(_ part: [UInt8]) -> [UInt8] {
        Array(part[..<(part.firstIndex(of: 0x0A) ?? part.endIndex)])
    }
}

/// The applier's transaction stops here when the transfer did not end whole.
struct SyncRestoreIncomplete: Error, CustomStringConvertible {
    var description: String { "the restored bundle did not arrive whole; nothing of it was kept" }
}
