import Foundation
import GRDB
import HealthProbeCanonical

/// Versioned archive migrations. Each one runs in a transaction and records
/// itself in `schema_migrations`; a failure rolls back and leaves the file as
/// it was. Shipped migrations are never edited.
public enum ArchiveMigrations {
    /// A migration: a version, a description and its SQL.
    public struct Migration: Sendable {
        public let version: Int
        public let description: String
        public let sql: String
        public init(version: Int, description: String, sql: String) {
            self.version = version
            self.description = description
            self.sql = sql
        }
    }

    /// The migrations this build knows, in order.
    public static let all: [Migration] = [
        Migration(version: SchemaV2.version, description: SchemaV2.description, sql: SchemaV2.sql),
        Migration(version: SchemaV3.version, description: SchemaV3.description, sql: SchemaV3.sql),
        Migration(version: SchemaV4.version, description: SchemaV4.description, sql: SchemaV4.sql),
        Migration(version: SchemaV5.version, description: SchemaV5.description, sql: SchemaV5.sql),
        Migration(version: SchemaV6.version, description: SchemaV6.description, sql: SchemaV6.sql),
        Migration(version: SchemaV7.version, description: SchemaV7.description, sql: SchemaV7.sql),
        Migration(version: SchemaV8.version, description: SchemaV8.description, sql: SchemaV8.sql),
        Migration(version: SchemaV9.version, description: SchemaV9.description, sql: SchemaV9.sql),
        Migration(version: SchemaV10.version, description: SchemaV10.description, sql: SchemaV10.sql),
        Migration(version: SchemaV11.version, description: SchemaV11.description, sql: SchemaV11.sql),
        Migration(version: SchemaV12.version, description: SchemaV12.description, sql: SchemaV12.sql),
        Migration(version: SchemaV13.version, description: SchemaV13.description, sql: SchemaV13.sql),
        Migration(version: SchemaV14.version, description: SchemaV14.description, sql: SchemaV14.sql),
        Migration(version: SchemaV15.version, description: SchemaV15.description, sql: SchemaV15.sql),
        Migration(version: SchemaV16.version, description: SchemaV16.description, sql: SchemaV16.sql),
    ]

    /// The highest schema version `db` records (0 when it records none: not yet an archive).
    public static func appliedVersion(_ db: Database) throws -> Int {
        guard try db.tableExists("schema_migrations") else { return 0 }
        return try Int.fetchOne(db, sql: "SELECT max(version) FROM schema_migrations") ?? 0
    }

    /// The highest schema version this build knows.
    public static var latestVersion: Int { all.map(\.version).max() ?? 0 }

    /// Value of `archive_metadata.archive_format`.
    public static let archiveFormat = "healthprobe-archive-v2"

    /// What a migration that filled the disk says: where, about how much it needs, what to do.
    static func diskFullMessage(path: String, to version: Int, stays: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        let size = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int).map { " (the archive is \(($0 + 999_999) / 1_000_000) MB)" } ?? ""
        return "the disk holding \(directory) filled while migrating the archive to schema \(version); the migration was rolled back and \(stays). "
            + "A migration that rebuilds tables needs free disk of up to the archive's size\(size) beside it; free space there and open the archive again"
    }

    /// Brings `db` up to date, refusing archives from newer builds.
    /// `willMigrate(from, to)` is called before an archive that has a schema is migrated.
    static func migrate(_ writer: any DatabaseWriter, migrations: [Migration] = all, now: Double,
                        willMigrate: (_ from: Int, _ to: Int) -> Void = { _, _ in }) throws {
        let known = migrations.map(\.version).max() ?? 0
        // The highest version applied, and how many of this build's migrations are recorded.
        let state: (applied: Int?, recorded: Int)? = try writer.read { db in
            guard try db.tableExists("schema_migrations") else {
                let tables = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'grdb_migrations'") ?? 0
                if tables > 0 {
                    throw ArchiveError(.notAnArchive, "this SQLite file has tables but no schema_migrations table: it is not a HealthProbe archive; point --home at a HealthProbe home or an empty directory")
                }
                return nil
            }
            let row = try Row.fetchOne(db, sql: """
                SELECT max(version), count(CASE WHEN version IN (\(migrations.map { String($0.version) }.joined(separator: ","))) THEN 1 END)
                FROM schema_migrations
                """)!
            return (row[0], row[1])
        }
        if let applied = state?.applied, applied > known {
            throw ArchiveError(.newerSchema, "the archive has schema version \(applied) but this build knows only up to \(known); it was written by a newer HealthProbe. Upgrade HealthProbe to open it; the archive was not changed")
        }
        // Up to date (each migration records itself in the transaction that applies it):
        // nothing to run, and the migrator's own checks would cost more than the open.
        if let state, state.applied == known, state.recorded == migrations.count {
            return
        }
        if writer.configuration.readonly {
            throw ArchiveError(.invalidState, "the archive has schema version \(state?.applied ?? 0) and this build needs \(known); open it once for writing to migrate it: `hp-node init` on a node's home (it keeps the archive) or `hp-server serve` for a server")
        }
        if let applied = state?.applied, applied > 0, applied < known { willMigrate(applied, known) }
        var migrator = DatabaseMigrator()
        for m in migrations {
            migrator.registerMigration("v\(m.version)") { db in
                StoredHash.registerFunctions(db)
                try db.execute(sql: m.sql)
                try db.execute(sql: "INSERT INTO schema_migrations(version, applied_at, description) VALUES (?, ?, ?)",
                               arguments: [m.version, now, m.description])
                try db.execute(sql: "INSERT INTO archive_metadata(key, value) VALUES ('schema_version', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                               arguments: [String(m.version)])
                try db.execute(sql: "INSERT OR IGNORE INTO archive_metadata(key, value) VALUES ('archive_format', ?)", arguments: [archiveFormat])
                try db.execute(sql: "INSERT OR IGNORE INTO archive_metadata(key, value) VALUES ('created_at', ?)", arguments: [CanonicalDate.string(now)])
            }
        }
        do {
            try migrator.migrate(writer)
        } catch let error as ArchiveError {
            throw error
        } catch {
            // Each migration commits on its own: the ones before the failed one stay.
            let at = (try? writer.read(appliedVersion)) ?? 0
            let stays = at == (state?.applied ?? 0) ? "the archive is unchanged (schema \(at))" : "the archive stays at schema \(at), migrated that far"
            if let e = error as? DatabaseError, e.resultCode == .SQLITE_FULL {
                throw ArchiveError(.storage, diskFullMessage(path: writer.path, to: known, stays: stays), cause: error)
            }
            throw ArchiveError(.migrationFailed, "a schema migration failed and was rolled back; \(stays) and was not deleted. Report this with the cause below", cause: error)
        }
    }
}
