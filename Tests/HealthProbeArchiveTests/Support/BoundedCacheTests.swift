import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("A page cache bounded for a while")
struct BoundedCacheTests {
    /// A database of about 24 MiB of rows, read through a 64 MiB cache.
    func filledCache(_ dir: TempDir) throws -> DatabaseQueue {
        let queue = try DatabaseQueue(path: dir.file("c.sqlite"))
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6000)
                INSERT INTO t SELECT i, randomblob(4000) FROM n;
                """)
        }
        return queue
    }

    @Test("the cache is held to the bound while the body runs and restored after; the pages it gave up go back to the system when they are many")
    func boundedAndTrimmed() throws {
        let dir = TempDir()
        let queue = try filledCache(dir)
        try queue.inDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -65536")
            _ = try Int.fetchOne(db, sql: "SELECT sum(length(b)) FROM t")
            #expect(db.cacheBytesUsed > 20 << 20, "the read filled the cache")
            var trims = 0
            let inside = try db.withBoundedCache(kib: 1024, trim: { trims += 1 }) { () throws -> (Int, Int) in
                _ = try Int.fetchOne(db, sql: "SELECT sum(length(b)) FROM t")
                return (try Int.fetchOne(db, sql: "PRAGMA main.cache_size") ?? 0, db.cacheBytesUsed)
            }
            #expect(inside.0 == -1024)
            #expect(inside.1 < 2 << 20, "the walk stayed within the bound")
            #expect(trims == 1, "some 20 MiB given up: trimmed once")
            #expect(try Int.fetchOne(db, sql: "PRAGMA main.cache_size") == -65536)

            // A cache that held little gives up little: no trim.
            try db.execute(sql: "PRAGMA cache_size = -65536")
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM t WHERE id < 100")
            try db.withBoundedCache(kib: 1024, trim: { trims += 1 }) {}
            #expect(trims == 1)

            // A cache already within the bound is left as it is.
            try db.execute(sql: "PRAGMA cache_size = -512")
            try db.withBoundedCache(kib: 1024, trim: { trims += 1 }) { () throws in
                #expect(try Int.fetchOne(db, sql: "PRAGMA main.cache_size") == -512)
            }
            #expect(trims == 1)
        }
    }
}
