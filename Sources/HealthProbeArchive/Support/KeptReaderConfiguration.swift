import GRDB

extension Archive {
    /// The configuration of a read-only pool kept open on an archive between reads (the
    /// dashboard's replica readers): `readers` connections, each with a page cache of at
    /// most `cacheKiB` KiB, so that memory grows by at most that much per chain kept open.
    public static func keptReaderConfiguration(readers: Int, cacheKiB: Int) -> Configuration {
        var config = Configuration()
        config.readonly = true
        config.busyMode = .timeout(10)
        config.maximumReaderCount = max(1, readers)
        let kib = max(64, cacheKiB)
        config.prepareDatabase { db in
            try ExactSumFunction.register(db)
            try db.execute(sql: "PRAGMA cache_size = -\(kib)")
        }
        return config
    }
}
