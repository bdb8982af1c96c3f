import Foundation
import GRDB

/// A second reader connection lent to an export (see
/// `DatabaseWriter.readWithHelper`): it waits for one job from the export,
/// or for the export to end without one, and runs it on its connection.
final class ExportHelper: @unchecked Sendable {
    private let condition = NSCondition()
    private var job: (@Sendable (Database) -> Void)?
    private var closed = false

    /// Hands `job` to the helper's connection, if it is still waiting for one.
    func offer(_ job: @escaping @Sendable (Database) -> Void) {
        condition.withLock {
            guard !closed else { return }
            self.job = job
            closed = true
            condition.broadcast()
        }
    }

    /// No job (more) for the helper: it returns as soon as it is free.
    func close() {
        condition.withLock {
            closed = true
            condition.broadcast()
        }
    }

    /// On the helper's connection: runs the job offered, if any.
    func serve(_ db: Database) {
        let job = condition.withLock { () -> (@Sendable (Database) -> Void)? in
            while !closed { condition.wait() }
            defer { self.job = nil }
            return self.job
        }
        job?(db)
    }
}
