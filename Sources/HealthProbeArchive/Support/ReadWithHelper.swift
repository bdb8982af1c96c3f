import Dispatch
import GRDB

extension DatabaseWriter {
    /// Runs `main` on a reader connection and, when the writer is a pool,
    /// `helper` at the same time on a second reader. Both read transactions
    /// start while the writer is held, so both see exactly the same committed
    /// state. `helper` may not run at all (an in-memory queue has a single
    /// connection, or the pool has no second reader free), so `main` must never
    /// wait for it to start; returns once both are done.
    func readWithHelper<T>(_ main: (Database) throws -> T, helper: @escaping @Sendable (Database) -> Void) throws -> T {
        guard let pool = self as? DatabasePool else { return try read(main) }
        return try withoutActuallyEscaping(main) { main in
            let result = ResultSlot<T>()
            let body = BodySlot(main)
            let group = DispatchGroup()
            pool.writeWithoutTransaction { _ in
                group.enter()
                pool.asyncConcurrentRead { db in
                    // Let go of the body even when no connection came (it never ran).
                    defer { body.release(); group.leave() }
                    result.set(Result { try body.run(try db.get()) })
                }
                group.enter()
                pool.asyncConcurrentRead { db in
                    defer { group.leave() }
                    if let db = try? db.get() { helper(db) }
                }
            }
            group.wait()
            return try result.get()
        }
    }
}

/// A result written by one thread and read by another after it is done.
private final class ResultSlot<T>: @unchecked Sendable {
    private var value: Result<T, any Error>?
    func set(_ value: Result<T, any Error>) { self.value = value }
    func get() throws -> T { try value!.get() }
}

/// Holds the non-escaping body for the reader's thread; `release` lets go of
/// it before the caller is told it is done, as `withoutActuallyEscaping`
/// requires.
private final class BodySlot<T>: @unchecked Sendable {
    private var body: ((Database) throws -> T)?
    init(_ body: @escaping (Database) throws -> T) { self.body = body }
    func run(_ db: Database) throws -> T { try body!(db) }
    func release() { body = nil }
}
