import GRDB

extension Database {
    /// Runs `body` with this connection's main page cache at most `kib` KiB
    /// (restored after); a cache already that small is left as it is.
    func withBoundedCache<T>(kib: Int, _ body: () throws -> T) throws -> T {
        let saved = try Int.fetchOne(self, sql: "PRAGMA main.cache_size") ?? -2000
        let bytes = saved < 0 ? -saved * 1024 : saved * (try Int.fetchOne(self, sql: "PRAGMA main.page_size") ?? 4096)
        guard bytes > kib * 1024 else { return try body() }
        try execute(sql: "PRAGMA main.cache_size = -\(kib)")
        defer { try? execute(sql: "PRAGMA main.cache_size = \(saved)") }
        return try body()
    }
}
