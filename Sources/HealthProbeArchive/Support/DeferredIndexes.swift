import Foundation
import GRDB

/// A bulk load's secondary indexes: dropped before the load and built again,
/// from their own SQL, once the rows are in, all inside the caller's transaction
/// (a rollback restores them). SQLite builds an index from a sort of its rows,
/// which for a load as large as the tables costs less than inserting each row
/// into every index as it comes (docs/decisions/2026-11-25-deferred-indexes.md).
/// Only indexes made by `CREATE INDEX` are dropped: the primary keys, UNIQUE
/// constraints and `CREATE UNIQUE INDEX` indexes stay and keep checking every row
/// as it is inserted (and the lookups before each insert use them).
struct DeferredIndexes {
    /// The tables a bundle or capture adds a row to for every new sample.
    static let sampleTables = ["samples", "sample_versions", "sample_observation_events", "sample_visibility_ranges"]

    /// The dropped indexes not built again yet, in schema order, with their table and the SQL that made them.
    private(set) var dropped: [(name: String, table: String, sql: String)] = []

    /// Drops the `CREATE INDEX` indexes of `tables` (in the open transaction).
    static func drop(_ db: Database, tables: [String] = sampleTables) throws -> DeferredIndexes {
        precondition(db.isInsideTransaction, "indexes are dropped only inside the transaction that builds them again")
        var deferred = DeferredIndexes()
        for index in try created(db, tables: tables) {
            try db.execute(sql: "DROP INDEX main.\(index.name.quotedDatabaseIdentifier)")
            deferred.dropped.append(index)
        }
        return deferred
    }

    /// The `CREATE INDEX` indexes of `tables` (not `CREATE UNIQUE INDEX`), in schema order, with their table and SQL.
    static func created(_ db: Database, tables: [String]) throws -> [(name: String, table: String, sql: String)] {
        let placeholders = tables.map { _ in "?" }.joined(separator: ", ")
        return try Row.fetchAll(db, sql: """
            SELECT name, tbl_name, sql FROM main.sqlite_schema
            WHERE type = 'index' AND sql IS NOT NULL AND sql NOT LIKE 'CREATE UNIQUE %' AND tbl_name IN (\(placeholders)) ORDER BY rowid
            """, arguments: StatementArguments(tables)).map { ($0["name"], $0["tbl_name"], $0["sql"]) }
    }

    /// Builds every dropped index again (with its SQL: partial indexes stay partial).
    /// SQLite's sorter may hold as much memory as the page cache is allowed, on top
    /// of it; the cache is bounded meanwhile so that the two stay within it.
    mutating func rebuild(_ db: Database) throws {
        try rebuild(db, where: { _ in true })
    }

    /// Builds again the dropped indexes of `table` only: a load that is done with a table
    /// (no row of it inserted later) builds them while the rest goes on.
    mutating func rebuild(_ db: Database, table: String) throws {
        try rebuild(db, where: { $0 == table })
    }

    private mutating func rebuild(_ db: Database, where chosen: (String) -> Bool) throws {
        let now = dropped.filter { chosen($0.table) }
        guard !now.isEmpty else { return }
        try db.withBoundedCache(kib: Self.sorterKiB) {
            for index in now { try db.execute(sql: index.sql) }
        }
        dropped.removeAll { chosen($0.table) }
    }

    /// The page cache (and so the sorter's memory) while indexes are built, in KiB.
    static let sorterKiB = 8 * 1024
}

extension DeferredIndexes {
    /// Bundle bytes per new sample, rounded up: a new sample's four lines (sample,
    /// version, event, open range) take about 1,740 bytes, so this estimate of the
    /// samples a bundle adds errs low.
    static let bundleBytesPerSample = 2048
    /// Below this many samples the indexes are maintained whatever the replica holds.
    static let minimumSamples = 20_000

    /// Whether `mode` asks for deferred indexes on a replica whose largest sample id is
    /// `samplesBefore`. Building an index again sorts every row of its table, old
    /// ones too: at 1,000,000 samples the rebuild cost 2.5 s of the 7 s that keeping
    /// the indexes row by row did (`scripts/bench/capture_floor.c`, `REBUILD=1`), so
    /// it pays while the replica holds fewer samples than the bundle adds.
    static func worthDeferring(_ mode: BundleApplier.IndexMode, samplesBefore: Int64) -> Bool {
        switch mode {
        case .maintained: return false
        case .deferred: return true
        case .whenEmpty: return samplesBefore == 0
        case .automatic(let bytes):
            let estimated = bytes / bundleBytesPerSample
            return estimated >= minimumSamples && Int64(estimated) >= samplesBefore
        }
    }
}

/// A first load across many transactions (an import into an empty archive): the
/// indexes are dropped in one transaction and built again in a later one. Between
/// the two, `archive_metadata` holds their SQL under `pendingKey`, written in the
/// drop's transaction and removed in the rebuild's, so a crash between them
/// leaves the SQL, and the next writable open builds them (`Archive.prepare`).
/// Built from a sort, their pages are full: about 10 bytes a sample less than
/// indexes kept row by row, which split pages as they grow
/// (docs/decisions/2026-11-25-bulk-first-import.md).
extension DeferredIndexes {
    /// The `archive_metadata` key that holds the dropped indexes' SQL (a JSON array).
    static let pendingKey = "deferred_indexes"

    /// The pending record (the dropped indexes' SQL as JSON), or nil when none are pending.
    static func pendingRecord(_ db: Database) throws -> String? {
        try String.fetchOne(db, sql: "SELECT value FROM archive_metadata WHERE key = ?", arguments: [pendingKey])
    }

    /// Drops the `CREATE INDEX` indexes of the sample tables except `keep`, and records their SQL.
    static func dropForBulkLoad(_ db: Database, keeping keep: Set<String>) throws -> Int {
        precondition(db.isInsideTransaction, "the drop and its record are one transaction")
        guard try pendingRecord(db) == nil else {
            throw ArchiveError(.invalidState, "indexes are already deferred; build them first (open the archive for writing)")
        }
        let dropped = try created(db, tables: sampleTables).filter { !keep.contains($0.name) }
        guard !dropped.isEmpty else { return 0 }
        let sql = try JSONEncoder().encode(dropped.map(\.sql))
        try db.execute(sql: "INSERT INTO archive_metadata(key, value) VALUES (?, ?)", arguments: [pendingKey, String(decoding: sql, as: UTF8.self)])
        for index in dropped {
            try db.execute(sql: "DROP INDEX main.\(index.name.quotedDatabaseIdentifier)")
        }
        return dropped.count
    }

    /// Builds the indexes a bulk load dropped, if any are pending; returns how many.
    @discardableResult
    static func rebuildPending(_ db: Database) throws -> Int {
        precondition(db.isInsideTransaction, "the rebuild and the record's removal are one transaction")
        guard let json = try pendingRecord(db) else { return 0 }
        let damaged = "archive_metadata.\(pendingKey) is not a list of CREATE INDEX statements, one each; restore the archive from a backup"
        guard let statements = try? JSONDecoder().decode([String].self, from: Data(json.utf8)),
              statements.allSatisfy({ $0.hasPrefix("CREATE INDEX ") }) else {
            throw ArchiveError(.invalidState, damaged)
        }
        // Each prepared alone: GRDB refuses SQL that holds a second statement.
        let prepared: [Statement]
        do { prepared = try statements.map { try db.makeStatement(sql: $0) } } catch { throw ArchiveError(.invalidState, damaged, cause: error) }
        try db.withBoundedCache(kib: sorterKiB) {
            for statement in prepared { try statement.execute() }
        }
        try db.execute(sql: "DELETE FROM archive_metadata WHERE key = ?", arguments: [pendingKey])
        return statements.count
    }
}

extension Archive {
    /// For a first load into an archive that holds no sample: drops the sample tables'
    /// lookup indexes (except `keep`) until `buildDeferredIndexes()`. Returns false, and
    /// drops nothing, when the archive already holds samples (building the indexes
    /// again would sort them too).
    public func deferIndexesForFirstLoad(keeping keep: Set<String>) throws -> Bool {
        try writer.write { db in
            let empty = try Bool.fetchOne(db, sql: "SELECT NOT EXISTS (SELECT 1 FROM samples)") ?? false
            guard empty else { return false }
            return try DeferredIndexes.dropForBulkLoad(db, keeping: keep) > 0
        }
    }

    /// Builds the indexes `deferIndexesForFirstLoad` dropped (nothing when none are pending).
    @discardableResult
    public func buildDeferredIndexes() throws -> Int {
        try writer.write { try DeferredIndexes.rebuildPending($0) }
    }
}
