import Foundation
import GRDB
@testable import HealthProbeArchive

/// Every row of the four sample tables, as SQLite quotes them, in rowid order.
public func sampleTableRows(_ db: Database) throws -> [String] {
    try ["samples", "sample_versions", "sample_observation_events", "sample_visibility_ranges"].flatMap { table in
        let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?) ORDER BY cid", arguments: [table])
        let quoted = columns.map { "quote(\($0))" }.joined(separator: " || ',' || ")
        return try String.fetchAll(db, sql: "SELECT \(quoted) FROM \(table) ORDER BY rowid")
    }
}

/// The archive's indexes, by name with their SQL.
public func archiveIndexes(_ db: Database) throws -> [String] {
    try String.fetchAll(db, sql: "SELECT name || ': ' || ifnull(sql, '') FROM sqlite_schema WHERE type = 'index' ORDER BY name")
}

/// What two archives written alike must share: `integrity_check`, every sample-table row,
/// the indexes, and the chain-state digests of `observations`.
public struct ArchiveContents: Equatable {
    public let integrity: [String]
    public let rows: [String]
    public let indexes: [String]
    public let digests: [String]

    public init(_ db: Database, observations: [Int64]) throws {
        integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
        rows = try sampleTableRows(db)
        indexes = try archiveIndexes(db)
        digests = try observations.map { try ChainStateDigest.compute(db, observationID: $0).digest }
    }
}

/// Two throw-away homes with the same keys (a copy of one new home), so the same
/// samples get the same fingerprints and digests in both.
public func twinHomes() throws -> [TempHome] {
    let homes = [TempHome(), TempHome()]
    _ = try homes[0].open()
    try FileManager.default.copyItem(atPath: homes[0].root, toPath: homes[1].root)
    return homes
}

/// The archive's page count after its WAL is checkpointed into it.
public func checkpointedPages(_ node: NodeArchive) throws -> Int {
    try node.archive.writer.writeWithoutTransaction { db in
        try db.checkpoint(.truncate)
        return try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
    }
}
