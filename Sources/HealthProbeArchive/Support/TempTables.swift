import GRDB

extension Database {
    /// Creates the connection's TEMP table `name` with `columns` unless it has it already.
    ///
    /// `CREATE TEMP TABLE IF NOT EXISTS` alone would be correct, but GRDB counts every
    /// CREATE statement as a schema change and empties the connection's statement
    /// cache after it, so every statement used after it was prepared again: once per
    /// bundle a replica applies, once per type run a capture writes. Looking the
    /// table up in `temp.sqlite_master` is not a schema change.
    func ensureTempTable(_ name: String, columns: String) throws {
        let exists = try Bool.fetchOne(cachedStatement(sql: "SELECT 1 FROM temp.sqlite_master WHERE type = 'table' AND name = ?"), arguments: [name]) ?? false
        if !exists { try execute(sql: "CREATE TEMP TABLE \(name)(\(columns))") }
    }

    func ensureTempTable(_ table: TempTable) throws { try ensureTempTable(table.name, columns: table.columns) }
}

/// A TEMP table some write path uses, by name and columns.
struct TempTable: Sendable {
    let name: String
    let columns: String

    /// Local days whose daily aggregates a delta recomputes.
    static let touched = TempTable(name: "hp_touched", columns: "bucket_start REAL PRIMARY KEY")
    /// The local days a full daily computation groups samples into.
    static let days = TempTable(name: "hp_days", columns: "bucket_start REAL PRIMARY KEY, bucket_end REAL NOT NULL")
    /// Samples an applied observation touched (`ObservationChecks`).
    static let touchedSamples = TempTable(name: "hp_touched_samples", columns: "sample_id INTEGER PRIMARY KEY")
}

extension Archive {
    /// Makes, on the writer connection, the TEMP tables every bundle apply may need,
    /// for a replica kept open for many of them: made later, by the first bundle that
    /// needs each, they would empty the connection's statement cache once more.
    public func prepareForApplies() throws {
        try writer.writeWithoutTransaction { db in
            for t in [TempTable.touched, .days, .touchedSamples] { try db.ensureTempTable(t) }
        }
    }
}
