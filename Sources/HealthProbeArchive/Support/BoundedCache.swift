import GRDB
import GRDBSQLite

extension Database {
    /// Runs `body` with this connection's main page cache at most `kib` KiB
    /// (restored after); a cache already that small is left as it is.
    ///
    /// The pages the smaller cache gives up go back to the system at once (`trim`,
    /// glibc's `malloc_trim`) when they come to `trimAfterKiB` or more: the allocator
    /// would keep them in the arena they came from, and the cache, growing again
    /// afterwards on another thread, would take new memory from another arena (a
    /// re-capture's phase peaked at 174 MB instead of 125 MB;
    /// docs/decisions/2026-11-25-heap-arenas.md, amended 2026-11-27).
    func withBoundedCache<T>(kib: Int, trim: () -> Void = Heap.trim, _ body: () throws -> T) throws -> T {
        let saved = try Int.fetchOne(self, sql: "PRAGMA main.cache_size") ?? -2000
        let bytes = saved < 0 ? -saved * 1024 : saved * (try Int.fetchOne(self, sql: "PRAGMA main.page_size") ?? 4096)
        guard bytes > kib * 1024 else { return try body() }
        let held = cacheBytesUsed
        try execute(sql: "PRAGMA main.cache_size = -\(kib)")
        defer { try? execute(sql: "PRAGMA main.cache_size = \(saved)") }
        if held - cacheBytesUsed >= Self.trimAfterKiB * 1024 { trim() }
        return try body()
    }

    /// How much a shrunk cache must have given up before the heap is trimmed, in KiB.
    static let trimAfterKiB = 8 * 1024

    /// The heap memory this connection's page caches hold, in bytes (SQLite's count).
    var cacheBytesUsed: Int {
        var current: Int32 = 0, highest: Int32 = 0
        guard sqlite3_db_status(sqliteConnection, SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0) == SQLITE_OK else { return 0 }
        return Int(current)
    }
}
