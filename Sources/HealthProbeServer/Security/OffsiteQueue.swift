import Foundation
import GRDB

/// The durable queue of bundles to copy to object storage (docs/operations.md,
/// "Off the machine"). A row is added when a bundle is accepted (or found by the
/// backfill) and marked uploaded once the object was read back with the same hash;
/// it survives restarts, so nothing accepted is left behind.
public enum OffsiteQueue {
    /// Registry migration "v9 offsite uploads".
    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE offsite_uploads (
                device_chain_hash TEXT NOT NULL,
                sequence INTEGER NOT NULL,
                queued_at REAL NOT NULL,
                uploaded_at REAL,
                sha256 TEXT,
                object_key TEXT,
                attempts INTEGER NOT NULL DEFAULT 0,
                last_error TEXT,
                PRIMARY KEY (device_chain_hash, sequence)
            ) WITHOUT ROWID;
            CREATE INDEX offsite_uploads_pending ON offsite_uploads(queued_at) WHERE uploaded_at IS NULL;
            """)
    }

    /// A bundle waiting for its upload.
    public struct Pending: Sendable, Equatable {
        public var chain: String
        public var sequence: Int
        public var attempts: Int
    }

    /// How far the queue is.
    public struct Counts: Sendable, Codable, Equatable {
        public var pending: Int
        public var uploaded: Int
        public var failing: Int
    }
}

extension DeviceRegistry {
    /// Queues bundles for upload; ones already queued or uploaded are left as they are.
    public func enqueueUploads(chain: String, sequences: some Sequence<Int>, now: Double) throws {
        try database.write { db in
            let statement = try db.cachedStatement(sql: "INSERT OR IGNORE INTO offsite_uploads(device_chain_hash, sequence, queued_at) VALUES (?, ?, ?)")
            for s in sequences { try statement.execute(arguments: [chain, s, now]) }
        }
    }

    /// The oldest `limit` bundles not uploaded yet.
    public func pendingUploads(limit: Int) throws -> [OffsiteQueue.Pending] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT device_chain_hash, sequence, attempts FROM offsite_uploads WHERE uploaded_at IS NULL
                ORDER BY queued_at, device_chain_hash, sequence LIMIT ?
                """, arguments: [limit]).map { OffsiteQueue.Pending(chain: $0[0], sequence: $0[1], attempts: $0[2]) }
        }
    }

    public func markUploaded(chain: String, sequence: Int, sha256: String, key: String, now: Double) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE offsite_uploads SET uploaded_at = ?, sha256 = ?, object_key = ?, last_error = NULL WHERE device_chain_hash = ? AND sequence = ?",
                           arguments: [now, sha256, key, chain, sequence])
        }
    }

    /// Records a failed attempt (what and where, never health values); the bundle stays queued.
    public func markUploadFailed(chain: String, sequence: Int, error: String) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE offsite_uploads SET attempts = attempts + 1, last_error = ? WHERE device_chain_hash = ? AND sequence = ?",
                           arguments: [String(error.prefix(500)), chain, sequence])
        }
    }

    /// When the bundle waiting longest for its upload was queued (nil: none waits).
    public func oldestPendingUpload() throws -> Double? {
        try database.read { db in
            try Double.fetchOne(db, sql: "SELECT min(queued_at) FROM offsite_uploads INDEXED BY offsite_uploads_pending WHERE uploaded_at IS NULL")
        }
    }

    /// Bundles not uploaded yet (through the pending index: cheap however many were uploaded).
    public func pendingUploadCount() throws -> Int {
        try database.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM offsite_uploads INDEXED BY offsite_uploads_pending WHERE uploaded_at IS NULL") ?? 0
        }
    }

    public func uploadCounts() throws -> OffsiteQueue.Counts {
        try database.read { db in
            let r = try Row.fetchOne(db, sql: """
                SELECT count(*) FILTER (WHERE uploaded_at IS NULL), count(*) FILTER (WHERE uploaded_at IS NOT NULL),
                       count(*) FILTER (WHERE uploaded_at IS NULL AND attempts > 0) FROM offsite_uploads
                """)!
            return OffsiteQueue.Counts(pending: r[0], uploaded: r[1], failing: r[2])
        }
    }
}
