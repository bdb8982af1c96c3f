import Foundation
import Synchronization
import HealthProbeArchive

/// The lines of a bundle being restored, handed from the connection (which receives,
/// checks and inflates each `RESTORE_PART`) to the thread applying them, a few parts at
/// a time: the bundle is applied while it arrives, never held whole in memory or on disk.
/// The connection says whether the transfer ended whole (`finish`) before the applier's
/// transaction may commit (`checked`).
final class RestoreLines: Sendable {
    let queue = BoundedQueue<[[UInt8]]>(capacity: 3)
    private let verdict = Mutex<(any Error)?>(SyncRestoreIncomplete())

    /// Queues the lines of one part (waits while three parts wait); throws once the applier stopped.
    func put(_ lines: [[UInt8]]) throws { try queue.put(lines) }

    /// The transfer ended: whole (`failure` nil) or not.
    func finish(failure: (any Error)?) {
        verdict.withLock { $0 = failure }
        queue.close(failure: failure)
    }

    /// Throws unless the transfer ended whole.
    func checked() throws {
        if let e = verdict.withLock({ $0 }) { throw e }
    }

    /// The lines in order, for the applier (ends early when the transfer failed).
    var lines: Lines { Lines(queue: queue) }

    struct Lines: Sequence, IteratorProtocol {
        let queue: BoundedQueue<[[UInt8]]>
        var chunk: [[UInt8]] = []
        var index = 0

        mutating func next() -> [UInt8]? {
            while index >= chunk.count {
                guard let more = try? queue.take() else { return nil }
                (chunk, index) = (more, 0)
            }
            defer { index += 1 }
            return chunk[index]
        }
    }

    /// Splits a part (whole lines, each ending with a newline) into its lines, without the newlines.
    static func split(_ part: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var start = 0
        for i in part.indices where part[i] == 0x0A {
            out.append(Array(part[start..<i]))
            start = i + 1
        }
        return out
    }
}

/// The applier's transaction stops here when the transfer did not end whole.
struct SyncRestoreIncomplete: Error, CustomStringConvertible {
    var description: String { "the restored bundle did not arrive whole; nothing of it was kept" }
}
