import HPSQLiteConfig

/// Process-wide SQLite settings, applied once by the executable (`ProcessSettings.apply`)
/// before the first connection opens; libraries never apply them: memory statistics off (they take one process-wide mutex on every
/// allocation, which two connections writing at once contend for).
public enum SQLiteSetup {
    /// SQLite's result: 0 when applied, 21 (`SQLITE_MISUSE`) when a connection opened first.
    public static let result: Int32 = hp_sqlite_disable_memstatus()

    /// Applies the settings if not yet done (`ProcessSettings.apply` calls it). Call before opening any connection.
    public static func ensure() { _ = result }
}
