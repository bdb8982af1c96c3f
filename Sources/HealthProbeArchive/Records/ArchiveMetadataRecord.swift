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

/// The bundle format of each sequence of the archive's chain: 1 up to the sequence stored under
/// `bundle_format_2_from`, 2 from it on (Protocol/bundles.md, format 2). A node stores it before it
/// first sends a format-2 bundle, and a restore when it applies the first one it receives, so that
/// every bundle is built again in the format it was sent in.
extension ArchiveMetadataRecord {
    public static let bundleFormat2FromKey = "bundle_format_2_from"

    /// The format of the chain's bundle at `sequence`.
    public static func bundleFormat(_ db: Database, sequence: Int) throws -> Int {
        guard let from = try bundleFormat2From(db) else { return 1 }
        return sequence >= from ? 2 : 1
    }

    /// The first sequence of format 2, nil when none is.
    public static func bundleFormat2From(_ db: Database) throws -> Int? {
        guard let text = try value(db, key: bundleFormat2FromKey) else { return nil }
        guard let from = Int(text), from >= 1 else {
            throw ArchiveError(.invalidState, "archive_metadata.\(bundleFormat2FromKey) is \(text.prefix(40)), not a sequence; restore the archive from a backup")
        }
        return from
    }

    /// Bundles from `sequence` on are format 2, unless a sequence already began it (a chain's
    /// format never goes back: what was sent is built again as it was). A node begins it only
    /// at a sequence it never sent (`Archive.sendingFormat`): one logged as sent went in format 1 and is
    /// sent again so (to a server restored from an older backup).
    public static func beginBundleFormat2(_ db: Database, at sequence: Int) throws {
        if try bundleFormat2From(db) != nil { return }
        try set(db, key: bundleFormat2FromKey, value: String(sequence))
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

    /// The format `chain`'s bundle at `sequence` is sent in (`ArchiveMetadataRecord.bundleFormat`).
    /// With `mayBegin` (a session that carries format 2), format 2 begins at `sequence` when no
    /// sequence began it yet and the log holds none at or after it as sent: one logged as sent
    /// went in format 1 and goes so again. Recorded before the bundle is built, so that it is
    /// built in that format whenever it is. One read, and a write only when format 2 begins.
    public func sendingFormat(sequence: Int, chain: Int64, mayBegin: Bool) async throws -> Int {
        let (format, lastSent) = try await writer.read { db in
            (try ArchiveMetadataRecord.bundleFormat(db, sequence: sequence), try BundleLogRecord.lastSentSequence(db, chain: chain))
        }
        guard format < 2, mayBegin, sequence > lastSent ?? 0 else { return format }
        return try await writer.write { db in
            try ArchiveMetadataRecord.beginBundleFormat2(db, at: sequence)
            return try ArchiveMetadataRecord.bundleFormat(db, sequence: sequence)
        }
    }

    /// Sets `created_at` to now (a replica made by copying a template).
    public func stampCreatedAt(_ now: Double) throws {
        try writer.write { db in
            try db.execute(sql: "UPDATE archive_metadata SET value = ? WHERE key = 'created_at'", arguments: [CanonicalDate.string(now)])
        }
    }
}
