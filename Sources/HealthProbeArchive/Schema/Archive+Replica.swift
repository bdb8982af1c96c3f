import Foundation
import GRDB

/// Connection settings and lifecycle for replicas and scratch archives (the server's).
extension Archive {
    /// Set on every connection of a kept replica: none checkpoints in a commit nor
    /// cuts the WAL file; `WALConnection.checkpoint` and `cutWALStep` do, outside the applies.
    static let noWALWorkInCommits = "PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = -1"

    /// Stops this archive's connection from checkpointing or cutting the WAL in its commits.
    public func deferWALWork() throws {
        try writer.writeWithoutTransaction { try $0.execute(sql: Self.noWALWorkInCommits) }
    }

    /// Turns SQLite's foreign-key checks off on the writer (a replica: `BundleApplier`
    /// resolves every reference itself; `hp-server verify` runs `PRAGMA foreign_key_check`).
    public func disableForeignKeyChecks() throws {
        try writer.writeWithoutTransaction { try $0.execute(sql: "PRAGMA foreign_keys = OFF") }
    }

    /// Checkpoints the WAL into the file (truncating it) and closes a single-connection archive.
    public func checkpointAndClose() throws {
        try writer.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
        try close()
    }

    /// Closes a single-connection archive (a pool closes when released).
    public func close() throws {
        try (writer as? DatabaseQueue)?.close()
    }
}

/// A second connection to an archive file, for checkpoints and WAL cuts beside its
/// writer (a passive checkpoint and a writer on another connection run side by side).
public final class WALConnection: Sendable {
    private let queue: DatabaseQueue

    /// Opens a connection to `path` whose own commits neither checkpoint nor cut the WAL.
    public init(path: String) throws {
        var config = Configuration()
        config.busyMode = .timeout(10)
        queue = try DatabaseQueue(path: path, configuration: config)
        try queue.writeWithoutTransaction { try $0.execute(sql: Archive.noWALWorkInCommits) }
    }

    /// A passive checkpoint.
    public func checkpoint() throws {
        try queue.writeWithoutTransaction { _ = try $0.checkpoint(.passive) }
    }

    /// When the WAL is fully copied: one tiny write transaction (a row written and
    /// deleted) with `journal_size_limit` at `targetBytes`, so SQLite cuts the WAL file
    /// as it restarts. False when not all was copied yet (a later turn).
    public func cutWALStep(targetBytes target: Int) throws -> Bool {
        try queue.writeWithoutTransaction { db in
            let (frames, copied) = try db.checkpoint(.passive)
            guard frames == copied else { return false }  // not all copied yet: a later turn
            try db.execute(sql: "PRAGMA journal_size_limit = \(target)")
            defer { try? db.execute(sql: "PRAGMA journal_size_limit = -1") }
            try db.inTransaction(.immediate) {
                try db.execute(sql: "INSERT INTO archive_metadata(key, value) VALUES ('wal-cut', '')")
                try db.execute(sql: "DELETE FROM archive_metadata WHERE key = 'wal-cut'")
                return .commit
            }
            _ = try db.checkpoint(.passive)
            return true
        }
    }
}
