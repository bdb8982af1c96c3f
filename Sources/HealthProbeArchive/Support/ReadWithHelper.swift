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
            // Each reader hands in one element when done: `main`'s result, or the helper's end.
            let done = BoundedQueue<ReaderDone<T>>(capacity: 2)
            let body = BodySlot(main)
            pool.writeWithoutTransaction { _ in
                pool.asyncConcurrentRead { db in
                    let result = Result { try body.run(try db.get()) }
                    // Let go of the body even when no connection came (it never ran).
                    body.release()
                    // `put` never waits (room for both) and never throws (never closed).
                    try? done.put(.main(result))
                }
                pool.asyncConcurrentRead { db in
                    if let db = try? db.get() { helper(db) }
                    try? done.put(.helper)
                }
            }
            var result: Result<T, any Error>?
            for _ in 0..<2 {
                if case .main(let r) = try done.take() { result = r }
            }
            return try result!.get()
        }
    }
}

/// What a reader of `readWithHelper` hands in when it is done.
private enum ReaderDone<T> {
    case main(Result<T, any Error>)
    case helper
}

/// Holds the non-escaping body for the reader's thread; `release` lets go of
/// it before the caller is told it is done, as `withoutActuallyEscaping`
/// requires.
// `@unchecked Sendable`: `body` is set in `init`, then used and released only on the reader's thread.
private final class BodySlot<T>: @unchecked Sendable {
    private var body: ((Database) throws -> T)?
    init(_ body: @escaping (Database) throws -> T) { self.body = body }
    func run(_ db: Database) throws -> T {
        guard let body else { throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "a reader's body ran after it was released") }
        return try body(db)
    }
    func release() { body = nil }
}
