import Foundation
import GRDB

/// Which server writes a bucket prefix. Each records in its registry the names of the
/// registry snapshots it wrote (`snapshots/<time>/`, before each upload) and of those it
/// found when it took the prefix over. Before its first upload, every snapshot interval and
/// each snapshot, it checks the prefix (`OffsiteUploader.checkBucket`): a newest complete
/// snapshot it does not know, newer than every one it knows, means a second server writes
/// there, one of them a copy no home check caught (a disk image of the live disk served
/// elsewhere). The one that finds it puts `writer-conflict` into the prefix, and every server
/// of the prefix that sees that object pauses its uploads (`offsite-conflict` in its data
/// directory), so the copy stops too, whichever wrote first. `hp-server adopt` on the live
/// server asks for a takeover (`offsite-takeover`): its service overwrites the object with
/// `taken_over` and an id only it holds, takes every snapshot there as known, and uploads
/// again; a server that finds the object naming another id pauses, however late it looks.
public enum SnapshotWriters {
    /// Registry migration "v12 offsite snapshots".
    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE offsite_snapshots (
                name TEXT PRIMARY KEY,
                written_at REAL NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE offsite_writer (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                takeover_id TEXT
            );
            """)
    }

    /// Registry migration "v13 offsite snapshot due": since when a registry snapshot has been
    /// due and none reached the bucket (one row while one is due; none after one arrived).
    static func migrateDue(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE offsite_snapshot_due (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                since REAL NOT NULL
            );
            """)
    }

    /// Registry migration "v14 offsite snapshot due served": how many seconds the server has
    /// been serving while the snapshot was due (its downtime not counted), so that a server
    /// that restarts often is told of a snapshot that never arrives as one that runs on is.
    /// A snapshot already due keeps the time v13 counted (all of it since it fell due), so an
    /// alert firing before the upgrade does not resolve at it.
    static func migrateDueServed(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE offsite_snapshot_due ADD COLUMN served REAL NOT NULL DEFAULT 0;
            UPDATE offsite_snapshot_due SET served = max(0, CAST(strftime('%s', 'now') AS REAL) - since);
            """)
    }

    /// The names kept: more than the snapshots kept in the bucket (`keepSnapshots`, 48).
    static let kept = 100
    /// In the data directory: uploads are paused for a second writer (its text says why).
    static let conflictFileName = "offsite-conflict"
    /// In the data directory: `adopt` asked for the prefix to be taken over.
    static let takeoverFileName = "offsite-takeover"
    /// In the bucket, under the prefix: a server found a second writer; every writer pauses.
    public static let conflictKey = "writer-conflict"

    /// Pauses `root`'s uploads, saying why.
    static func markConflict(_ root: String, _ why: String) throws {
        let path = root + "/" + conflictFileName
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
        try DataDirectory.writeMarker(root, conflictFileName, why + "\n")
    }

    /// Why `root`'s uploads are paused for a second writer; nil when they are not, or when
    /// `adopt` asked for a takeover since (a round that was checking while adopt ran may have
    /// written the file after adopt removed it: the request wins).
    public static func conflict(_ root: String) -> String? {
        let path = root + "/" + conflictFileName
        guard FileManager.default.fileExists(atPath: path), !takeoverRequested(root) else { return nil }
        guard let handle = FileHandle(forReadingAtPath: path), let data = try? handle.read(upToCount: 1000) else {
            return "a second server writes to this server's bucket prefix (\(conflictFileName) cannot be read)"
        }
        try? handle.close()
        return String(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).prefix(900))
    }

    /// `adopt`: uploads resume, and the service takes the prefix over at its next round.
    static func requestTakeover(_ root: String) throws {
        // The request first: a round between the two sees it, never neither.
        if !takeoverRequested(root) {
            try DataDirectory.writeMarker(root, takeoverFileName, "`hp-server adopt` asked for the bucket prefix to be taken over at the next upload round\n")
        }
        let conflict = root + "/" + conflictFileName
        if FileManager.default.fileExists(atPath: conflict) { try FileManager.default.removeItem(atPath: conflict) }
    }

    static func takeoverRequested(_ root: String) -> Bool { FileManager.default.fileExists(atPath: root + "/" + takeoverFileName) }

    static func takeoverDone(_ root: String) throws {
        let path = root + "/" + takeoverFileName
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
    }

    /// The texts for `offsite-conflict`: what was found, and what to do.
    static func foreignText(location: String, newest: String, ours: String, me: String) -> String {
        "uploads to \(location) are paused on \(me): its newest registry snapshot (snapshots/\(newest)) is not this server's (this server's newest is \(ours)), "
            + "so a second server writes there, one of the two a copy. Stop the copy (do not adopt it); on the live server run `hp-server adopt --data DIR` to take the prefix over"
    }

    static func markedText(location: String, takenOver: Bool, by: String?, me: String) -> String {
        let who = by.map { " (\(String($0.prefix(300))))" } ?? ""
        return (takenOver ? "uploads to \(location) are paused on \(me): another server took the prefix over\(who) after a second writer was found there (\(conflictKey)), so this one is taken for the copy. "
                          : "uploads to \(location) are paused on \(me): a server writing there\(who) found a second writer (\(conflictKey)), one of the two a copy. ")
            + "Stop the copy (do not adopt it); on the live server run `hp-server adopt --data DIR` to take the prefix over"
    }

    static func occupiedText(location: String, count: Int, me: String) -> String {
        "uploads to \(location) are paused on \(me): it holds \(count) registry snapshot(s) this server did not write (another server's prefix). "
            + "Give this server an s3_prefix of its own; or, if it replaces that server, run `hp-server adopt --data DIR` to take the prefix over"
    }
}

extension DeviceRegistry {
    /// Records `name` as a snapshot this server writes (before its upload begins).
    public func recordOffsiteSnapshot(_ name: String, now: Double) throws {
        try database.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO offsite_snapshots(name, written_at) VALUES (?, ?)", arguments: [name, now])
            try db.execute(sql: "DELETE FROM offsite_snapshots WHERE name NOT IN (SELECT name FROM offsite_snapshots ORDER BY name DESC LIMIT ?)",
                           arguments: [SnapshotWriters.kept])
        }
    }

    /// Records the snapshots found in the prefix when this server took it over, as known.
    public func recordFoundSnapshots(_ names: [String], now: Double) throws {
        try database.write { db in
            for name in names { try db.execute(sql: "INSERT OR IGNORE INTO offsite_snapshots(name, written_at) VALUES (?, ?)", arguments: [name, now]) }
            try db.execute(sql: "DELETE FROM offsite_snapshots WHERE name NOT IN (SELECT name FROM offsite_snapshots ORDER BY name DESC LIMIT ?)",
                           arguments: [SnapshotWriters.kept])
        }
    }

    /// The snapshots this server wrote or found when it took the prefix over (their names).
    public func offsiteSnapshots() throws -> Set<String> {
        try database.read { db in Set(try String.fetchAll(db, sql: "SELECT name FROM offsite_snapshots")) }
    }

    /// The id of this server's last takeover of its prefix (`writer-conflict` names it); nil before any.
    public func offsiteTakeoverID() throws -> String? {
        try database.read { db in try String.fetchOne(db, sql: "SELECT takeover_id FROM offsite_writer WHERE id = 1") }
    }

    func setOffsiteTakeoverID(_ id: String) throws {
        try database.write { db in try db.execute(sql: "INSERT OR REPLACE INTO offsite_writer(id, takeover_id) VALUES (1, ?)", arguments: [id]) }
    }

    /// A registry snapshot is due from `now` (the earliest time is kept until one arrives).
    public func markOffsiteSnapshotDue(now: Double) throws {
        try database.write { db in try db.execute(sql: "INSERT OR IGNORE INTO offsite_snapshot_due(id, since) VALUES (1, ?)", arguments: [now]) }
    }

    /// A snapshot reached the bucket: none is due.
    public func clearOffsiteSnapshotDue() throws {
        try database.write { db in try db.execute(sql: "DELETE FROM offsite_snapshot_due") }
    }

    /// The server served `seconds` more while a snapshot was due (nothing when none is).
    public func countOffsiteSnapshotDue(served seconds: Double) throws {
        try database.write { db in try db.execute(sql: "UPDATE offsite_snapshot_due SET served = served + ? WHERE id = 1", arguments: [seconds]) }
    }

    /// Since when a registry snapshot has been due without reaching the bucket, and for how
    /// many seconds of that the server was serving; nil when none is due.
    public func offsiteSnapshotDue() throws -> (since: Double, served: Double)? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT since, served FROM offsite_snapshot_due WHERE id = 1").map { ($0["since"], $0["served"]) }
        }
    }

    /// Forgets them, and since when the old home owed the bucket a snapshot (`adopt`,
    /// `restore --new-home`, with a takeover): the new home owes one from its own start.
    public func forgetOffsiteSnapshots() throws {
        try database.write { db in try db.execute(sql: "DELETE FROM offsite_snapshots; DELETE FROM offsite_snapshot_due") }
    }
}
