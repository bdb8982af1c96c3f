import Foundation
import GRDB
import HealthProbeCanonical

/// The web's signed-in sessions, kept in the registry so that they survive a restart
/// and end the moment their person's password, role or membership changes. Only
/// `SHA-256("hp:v2:web_session:" + id)` of a session id is stored, never the id.
public enum WebSessions {
    /// One stored session: its owner, its encoded contents (the web layer's), its expiry.
    public struct Stored: Sendable, Equatable {
        public var personID: Int64
        public var data: Data
        public var expiresAt: Double?

        public init(personID: Int64, data: Data, expiresAt: Double?) {
            self.personID = personID
            self.data = data
            self.expiresAt = expiresAt
        }
    }

    /// Registry migration "v3 web sessions".
    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE web_sessions (
                id_hash TEXT PRIMARY KEY,
                person_id INTEGER NOT NULL REFERENCES people(id) ON DELETE CASCADE,
                data BLOB NOT NULL,
                created_at REAL NOT NULL,
                expires_at REAL
            ) WITHOUT ROWID;
            CREATE INDEX idx_web_sessions_person ON web_sessions(person_id);
            """)
    }

    /// The stored form of a session id.
    public static func idHash(_ id: String) -> String { ArchiveHasher.sha256(.webSession, Array(id.utf8)) }

    /// Ends every session of a person (inside the transaction that changes them).
    static func end(_ db: Database, personID: Int64) throws {
        try db.execute(sql: "DELETE FROM web_sessions WHERE person_id = ?", arguments: [personID])
    }
}

extension DeviceRegistry {
    /// Stores (or replaces) the session whose id hashes to `idHash`. `create` refuses an existing one.
    public func storeSession(idHash: String, _ session: WebSessions.Stored, now: Double, create: Bool) throws {
        try database.write { db in
            if create, try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM web_sessions WHERE id_hash = ?)", arguments: [idHash])! {
                throw AuthError(.duplicate, "a session with this id exists")
            }
            // Expired sessions go whenever one is written: the table holds live sessions only.
            try db.execute(sql: "DELETE FROM web_sessions WHERE expires_at IS NOT NULL AND expires_at <= ?", arguments: [now])
            try db.execute(sql: """
                INSERT INTO web_sessions(id_hash, person_id, data, created_at, expires_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(id_hash) DO UPDATE SET person_id = excluded.person_id, data = excluded.data, expires_at = excluded.expires_at
                """, arguments: [idHash, session.personID, session.data, now, session.expiresAt])
        }
    }

    /// The live session whose id hashes to `idHash`, or nil (unknown, ended or expired).
    public func session(idHash: String, now: Double) throws -> WebSessions.Stored? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT person_id, data, expires_at FROM web_sessions WHERE id_hash = ? AND (expires_at IS NULL OR expires_at > ?)",
                             arguments: [idHash, now]).map { WebSessions.Stored(personID: $0["person_id"], data: $0["data"], expiresAt: $0["expires_at"]) }
        }
    }

    /// Ends one session (sign-out).
    public func removeSession(idHash: String) throws {
        try database.write { db in try db.execute(sql: "DELETE FROM web_sessions WHERE id_hash = ?", arguments: [idHash]) }
    }

    /// Ends every session of `person`; returns how many there were.
    @discardableResult
    public func endSessions(person name: String) throws -> Int {
        try database.write { db in
            try WebSessions.end(db, personID: try Self.personID(db, name))
            return db.changesCount
        }
    }

    /// How many live sessions `person` has.
    public func sessionCount(person name: String, now: Double) throws -> Int {
        try database.read { db in
            try Int.fetchOne(db, sql: """
                SELECT count(*) FROM web_sessions s JOIN people p ON p.id = s.person_id
                WHERE p.name = ? AND (s.expires_at IS NULL OR s.expires_at > ?)
                """, arguments: [name, now])!
        }
    }
}
