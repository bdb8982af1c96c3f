import Foundation
import GRDB

/// Small named lookups on `observations` (a replica holds one chain, so "latest" is the table's).
extension ObservationQueries {
    /// Observation `id`'s time and status, `nil` when there is none.
    public static func observedAtAndStatus(_ db: Database, id: Int64) throws -> (observedAt: Double, status: String)? {
        guard let row = try Row.fetchOne(db, sql: "SELECT observed_at, status FROM observations WHERE id = ?", arguments: [id]) else { return nil }
        return (row["observed_at"], row["status"])
    }

    /// The notes of observation `id` (a capture's window, say), nil when none.
    public static func notes(_ db: Database, id: Int64) throws -> String? {
        try String.fetchOne(db, sql: "SELECT notes FROM observations WHERE id = ?", arguments: [id])
    }

    /// The observation before `id`, `nil` when `id` is the first.
    public static func previousID(_ db: Database, before id: Int64) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations WHERE id < ?", arguments: [id])
    }

    /// Whether observation `id` exists.
    public static func exists(_ db: Database, id: Int64) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM observations WHERE id = ?", arguments: [id]) != nil
    }

    /// The latest observation id in the archive, `nil` when none.
    public static func latestID(_ db: Database) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations")
    }

    /// The latest observation's id and time, `nil` when none.
    public static func latest(_ db: Database) throws -> (id: Int64, observedAt: Double)? {
        guard let row = try Row.fetchOne(db, sql: "SELECT id, observed_at FROM observations ORDER BY id DESC LIMIT 1") else { return nil }
        return (row["id"], row["observed_at"])
    }

    /// Observation ids after `id`, oldest first, at most `limit`.
    public static func ids(_ db: Database, after id: Int64, limit: Int) throws -> [Int64] {
        try Int64.fetchAll(db, sql: "SELECT id FROM observations WHERE id > ? ORDER BY id LIMIT ?", arguments: [id, limit])
    }
}
