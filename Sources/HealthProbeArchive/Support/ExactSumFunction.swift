import GRDB
import HPSQLiteConfig

/// `hp_exact_micro_sum(X)`, the SQL side of `ExactMicroSum` (written in C beside the process's
/// SQLite settings, as fast as SQLite's own `sum`): the exact sum of `round(X * 1e6)` in
/// 64 bits, NULL when there is no value or when the sum (or a value) is beyond them.
/// Registered on every connection an archive opens, before anything reads aggregates.
enum ExactSumFunction {
    static let name = "hp_exact_micro_sum"

    static func register(_ db: Database) throws {
        let rc = hp_sqlite_register_exact_sum(db.sqliteConnection)
        guard rc == 0 else { throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: "cannot register \(name)") }
    }
}
