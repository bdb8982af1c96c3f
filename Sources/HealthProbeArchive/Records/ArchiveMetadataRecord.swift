import Foundation
import GRDB
import HealthProbeCanonical

/// One row of `archive_metadata`: a key and its text value.
public struct ArchiveMetadataRecord: Codable, Sendable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "archive_metadata"

    public var key: String
    public var value: String

    public enum CodingKeys: String, CodingKey, ColumnExpression { case key, value }
    /// The table's columns.
    public typealias Columns = CodingKeys

    /// The value stored under `key`, `nil` when none.
    public static func value(_ db: Database, key: String) throws -> String? {
        try String.fetchOne(db, sql: "SELECT value FROM archive_metadata WHERE key = ?", arguments: [key])
    }

    /// Stores `value` under `key`, replacing what was there.
    public static func set(_ db: Database, key: String, value: String) throws {
        try db.execute(sql: "INSERT INTO archive_metadata(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", arguments: [key, value])
    }
}

extension Archive {
    /// The metadata value stored under `key`, `nil` when none.
    public func metadata(_ key: String) throws -> String? {
        try writer.read { db in try ArchiveMetadataRecord.value(db, key: key) }
    }

    /// Stores metadata values (all in one transaction).
    public func setMetadata(_ values: KeyValuePairs<String, String>) throws {
        let pairs = values.map { ($0.key, $0.value) }
        try writer.write { db in for (k, v) in pairs { try ArchiveMetadataRecord.set(db, key: k, value: v) } }
    }

    /// Sets `created_at` to now (a replica made by copying a template).
    public func stampCreatedAt(_ now: Double) throws {
        try writer.write { db in
            try db.execute(sql: "UPDATE archive_metadata SET value = ? WHERE key = 'created_at'", arguments: [CanonicalDate.string(now)])
        }
    }
}
