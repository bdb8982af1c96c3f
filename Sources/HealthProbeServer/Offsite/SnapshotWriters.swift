import Foundation
import GRDB

/// Which registry snapshots in the bucket this data directory wrote (the names of their
/// `snapshots/<time>/` directories), recorded before each is uploaded, and which it found
/// there when it began. Before the next, the newest complete snapshot in the bucket must be
/// one of them: one it did not write means
/// another server writes into the same prefix, one of them a copy that no home check caught
/// (a disk image or a snapshot of the live disk served elsewhere). The one that finds it
/// pauses its uploads and backups (`offsite-conflict`, `RestoredCopy.paused`) until
/// `hp-server adopt`, which forgets the names: the adopted server takes the bucket over.
public enum SnapshotWriters {
    /// Registry migration "v12 offsite snapshots".
    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE offsite_snapshots (
                name TEXT PRIMARY KEY,
                written_at REAL NOT NULL
            ) WITHOUT ROWID;
            """)
    }

    /// The names kept: enough to recognize this server's snapshots however many are kept in the bucket.
    static let kept = 100

    /// The conflict file in the data directory while uploads and backups are paused for it.
    static let conflictFileName = "offsite-conflict"

    /// Pauses `root`: the newest snapshot `name` in `location` was written by another server.
    static func markConflict(_ root: String, name: String, location: String) throws {
        let text = "another server wrote the newest registry snapshot in \(location) (\(name)), after this one's last: two servers share the bucket, one of them a copy\n"
        try? FileManager.default.removeItem(atPath: root + "/" + conflictFileName)
        try DataDirectory.writeMarker(root, conflictFileName, text)
    }

    /// Why `root` is paused for a bucket conflict; nil when it is not.
    static func conflict(_ root: String) -> String? {
        let path = root + "/" + conflictFileName
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let handle = FileHandle(forReadingAtPath: path), let data = try? handle.read(upToCount: 600) else {
            return "another server writes into the same bucket (\(conflictFileName) cannot be read)"
        }
        try? handle.close()
        return String(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).prefix(500))
    }
}

extension DeviceRegistry {
    /// Records `name` as a snapshot this server writes (before its upload begins).
    public func recordOffsiteSnapshot(_ name: String, now: Double) throws {
        try database.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO offsite_snapshots(name, written_at) VALUES (?, ?)", arguments: [name, now])
            try db.execute(sql: "DELETE FROM offsite_snapshots WHERE name NOT IN (SELECT name FROM offsite_snapshots ORDER BY written_at DESC, name DESC LIMIT ?)",
                           arguments: [SnapshotWriters.kept])
        }
    }

    /// Records the snapshots found in the bucket when this server takes it over (the first
    /// snapshot from here, or the first since `adopt`), as known: dated 0, they are forgotten
    /// before any this server wrote.
    public func recordFoundSnapshots(_ names: [String]) throws {
        try database.write { db in
            for name in names { try db.execute(sql: "INSERT OR IGNORE INTO offsite_snapshots(name, written_at) VALUES (?, 0)", arguments: [name]) }
        }
    }

    /// The snapshots this server wrote or found when it took the bucket over (their names), `SnapshotWriters.kept` at most.
    public func offsiteSnapshots() throws -> Set<String> {
        try database.read { db in Set(try String.fetchAll(db, sql: "SELECT name FROM offsite_snapshots")) }
    }

    /// Forgets them (`adopt`, `restore --new-home`): the next snapshot takes the bucket over.
    public func forgetOffsiteSnapshots() throws {
        try database.write { db in try db.execute(sql: "DELETE FROM offsite_snapshots") }
    }
}
