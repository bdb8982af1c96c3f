import Foundation
import GRDB
import HealthProbeArchive

/// Restore tokens (Protocol/README.md section 8): an administrator issues a device's
/// enrollment token with a chain to take over (`hp-server enroll --restore-chain`), for
/// a replacement device of the person whose device owned it. Redeeming the token moves
/// the chain to the new device in the same transaction; the old device's credential no
/// longer writes or reads it.
public enum ChainRestores {
    /// Registry migration "v10 chain restores".
    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE chain_restores (
                device_id INTEGER PRIMARY KEY REFERENCES devices(id) ON DELETE CASCADE,
                device_chain_hash TEXT NOT NULL,
                issued_at REAL NOT NULL
            );
            """)
    }

    /// Moves the chain a pending restore names to device `id` (called while it redeems its token).
    /// A token issued before the chain last moved (another replacement's token redeemed since)
    /// is refused: it was meant to replace a device that no longer holds the chain, and must
    /// not take it from the one that does.
    static func transfer(_ db: Database, to id: Int64, name: String, now: Double) throws {
        guard let restore = try Row.fetchOne(db, sql: "SELECT device_chain_hash, issued_at FROM chain_restores WHERE device_id = ?", arguments: [id]) else { return }
        let chain: String = restore["device_chain_hash"], issuedAt: Double = restore["issued_at"]
        let owner = try Row.fetchOne(db, sql: """
            SELECT d.name, o.bound_at FROM chain_owners o JOIN devices d ON d.id = o.device_id WHERE o.device_chain_hash = ?
            """, arguments: [chain])
        if let bound: Double = owner?["bound_at"], bound > issuedAt {
            throw DeviceRegistry.AuthError(.unauthorized, "this restore token was issued before its chain moved to another device; ask the administrator for a new one (hp-server enroll --restore-chain)")
        }
        let previous: String? = owner?["name"]
        try db.execute(sql: """
            INSERT INTO chain_owners(device_chain_hash, device_id, bound_at) VALUES (?, ?, ?)
            ON CONFLICT(device_chain_hash) DO UPDATE SET device_id = excluded.device_id, bound_at = excluded.bound_at
            """, arguments: [chain, id, now])
        try db.execute(sql: "DELETE FROM chain_restores WHERE device_id = ?", arguments: [id])
        try Audit.record(db, Audit.Actor(name: name, via: .device), .chainTransfer, target: chain, detail: "from \(previous ?? "no device") to \(name)")
    }
}

extension DeviceRegistry {
    /// Issues `name`'s enrollment token as a replacement for the device that owns `chain`:
    /// the new device belongs to that device's person, and takes the chain over when it
    /// enrolls. Refused when the chain has no owner, or `person` is someone else.
    public func issueRestoreToken(name: String, chain: String, person: Int64?, now: Double, by actor: Audit.Actor = .cli) throws -> String {
        let owner = try database.read { db in
            try Row.fetchOne(db, sql: """
                SELECT d.name, d.person_id FROM chain_owners o JOIN devices d ON d.id = o.device_id WHERE o.device_chain_hash = ?
                """, arguments: [chain])
        }
        guard let owner else {
            throw AuthError(.notFound, "chain \(chain.prefix(16)) has no device (no bundle of it was ever accepted); there is nothing to restore")
        }
        let ownerPerson: Int64? = owner["person_id"]
        if let person, person != ownerPerson {
            throw AuthError(.conflict, "chain \(chain.prefix(16)) belongs to \(owner["name"] as String)'s person; a restore token is only for a replacement device of the same person (leave out --person)")
        }
        return try database.write { db in
            let secret = try Self.issueToken(db, name: name, person: ownerPerson, now: now, by: actor)
            try db.execute(sql: """
                INSERT INTO chain_restores(device_id, device_chain_hash, issued_at) SELECT id, ?, ? FROM devices WHERE name = ?
                ON CONFLICT(device_id) DO UPDATE SET device_chain_hash = excluded.device_chain_hash, issued_at = excluded.issued_at
                """, arguments: [chain, now, name])
            try Audit.record(db, actor, .chainRestoreToken, target: chain, detail: "for \(name), replacing \(owner["name"] as String)")
            return secret
        }
    }

    /// Whether `identity` may fetch `chain`'s bundles: only the device that owns it.
    public func authorizeRestore(_ identity: Identity, chain: String) throws {
        let owner = try database.read { db in
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT device_id FROM chain_owners WHERE device_chain_hash = ?"), arguments: [chain])
        }
        guard owner == identity.id else {
            throw AuthError(.forbidden, "this device's credential does not own chain \(chain.prefix(16)); a device restores only its own chain (a replacement device needs a restore token: hp-server enroll --restore-chain)")
        }
    }
}
