import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("TEMP tables without emptying the statement cache")
struct TempTablesTests {
    @Test("made once per connection; asking again keeps the connection's prepared statements; in memory and on disk")
    func once() throws {
        let dir = TempDir()
        ProcessSettings.apply()  // before this process's first connection, or the setting cannot apply
        for queue in [try DatabaseQueue(), try DatabaseQueue(path: dir.file("t.sqlite"))] {
            try queue.write { db in
                try db.ensureTempTable("hp_t", columns: "a INTEGER PRIMARY KEY, b TEXT")
                try db.execute(sql: "INSERT INTO temp.hp_t(a, b) VALUES (1, 'x')")
                let before = try db.cachedStatement(sql: "SELECT count(*) FROM temp.hp_t")
                try db.ensureTempTable("hp_t", columns: "a INTEGER PRIMARY KEY, b TEXT")
                #expect(try db.cachedStatement(sql: "SELECT count(*) FROM temp.hp_t") === before)
                #expect(try Int.fetchOne(before) == 1, "the table and its rows are kept")
                // What it avoids: GRDB empties the cache after any CREATE, even one that creates nothing.
                try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS hp_t(a INTEGER PRIMARY KEY, b TEXT)")
                #expect(try db.cachedStatement(sql: "SELECT count(*) FROM temp.hp_t") !== before)
            }
        }
    }
}
