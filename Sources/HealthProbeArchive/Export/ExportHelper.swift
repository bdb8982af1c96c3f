import Foundation
import GRDB

/// A second reader connection lent to an export (see
/// `DatabaseWriter.readWithHelper`): it waits for one job from the export,
/// or for the export to end without one, and runs it on its connection.
/// The hand-off is a `BoundedQueue` of one job.
final class ExportHelper: Sendable {
    typealias Job = @Sendable (Database) -> Void
    private let queue = BoundedQueue<Job>(capacity: 1)

    /// Hands `job` to the helper's connection, if it is still waiting for one.
    func offer(_ job: @escaping Job) {
        try? queue.put(job)
        queue.close()
    }

    /// No job (more) for the helper: it returns as soon as it is free.
    func close() { queue.close() }

    /// On the helper's connection: runs the job offered, if any.
    func serve(_ db: Database) {
        if let job = try? queue.take() { job(db) }
    }
}
