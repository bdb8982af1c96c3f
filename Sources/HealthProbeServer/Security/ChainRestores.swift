import Foundation
import GRDB
import HealthProbeArchive

/// Restore tokens (Protocol/README.md section 8): an administrator issues a device's
/// enrollment token with a chain to take over (`hp-server enroll --restore-chain`), for
/// a replacement device of the person whose device owned it. The new device takes the chain
/// over when it first names it (`takeOver`); from then on the old device's credential no
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

    /// Registry migration "v15 chain restores name the device replaced": the device that owned
    /// the chain when the token was issued (null in rows issued before it: their time is compared).
    static func migrateReplaced(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE chain_restores ADD COLUMN replaced_device_id INTEGER")
    }

    /// Registry migration "v16 devices name their replacement": the device that took a chain
    /// over from this one with a restore token (take-overs before it are in the audit log only).
    static func migrateReplacedBy(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE devices ADD COLUMN replaced_by_device_id INTEGER REFERENCES devices(id) ON DELETE SET NULL")
    }

    /// Refuses a token whose chain has moved since it was issued (another replacement's token
    /// taken over since): it was meant to replace a device that no longer holds the chain, and
    /// must not take it from the one that does. The chain's owner must still be the device the
    /// token replaces (for a row from before that was recorded: bound no later than the token
    /// was issued). Checked when the token is redeemed, and again when the chain is taken over.
    static func refuseStale(_ db: Database, device id: Int64, redeemed: Bool = false) throws {
        guard let restore = try restore(db, device: id), restore.stale else { return }
        if redeemed {
            // Enrolled already, the device can hold no token again under its name.
            throw DeviceRegistry.AuthError(.forbidden, "this restore token was issued before its chain moved to another device; nothing was taken over. "
                                           + "Ask the administrator to revoke this device and, if it is still meant, issue a restore token under a new name (hp-server enroll --name NEW --restore-chain)")
        }
        throw DeviceRegistry.AuthError(.unauthorized, "this restore token was issued before its chain moved to another device; nothing was taken over "
                                       + "(the token stays unused); ask the administrator for a new one (hp-server enroll --restore-chain)")
    }

    /// The chain device `id`'s restore token names (redeemed or not, not taken over yet), and
    /// whether it is stale: the chain moved since the token was issued, so `refuseStale` refuses it.
    static func restore(_ db: Database, device id: Int64) throws -> (chain: String, stale: Bool)? {
        guard let restore = try Row.fetchOne(db, sql: "SELECT device_chain_hash, issued_at, replaced_device_id FROM chain_restores WHERE device_id = ?", arguments: [id]) else { return nil }
        let chain: String = restore["device_chain_hash"], issuedAt: Double = restore["issued_at"], replaced: Int64? = restore["replaced_device_id"]
        let owner = try Row.fetchOne(db, sql: "SELECT device_id, bound_at FROM chain_owners WHERE device_chain_hash = ?", arguments: [chain])
        if let replaced { return (chain, (owner?["device_id"] as Int64?) != replaced) }
        return (chain, ((owner?["bound_at"] as Double?) ?? -.infinity) > issuedAt)
    }

    /// The chain device `id`'s redeemed restore token names, not taken over yet.
    static func pending(_ db: Database, device id: Int64) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT device_chain_hash FROM chain_restores WHERE device_id = ?"), arguments: [id])
    }

    /// A device that redeemed a restore token takes its chain over when it first names that
    /// chain (asking for its state or its bundles, or sending one), before anything else of the
    /// request is checked. A node names the chain its key files make, so one holding another
    /// chain's key files (a mix-up) takes nothing; the server does not check key files: the
    /// token is the administrator's grant. Until then the device may name no other chain.
    /// Nothing happens for a device with no such token.
    static func takeOver(_ db: Database, _ identity: DeviceRegistry.Identity, chain: String, now: Double) throws {
        guard let pending = try pending(db, device: identity.id) else { return }
        // Revoked since the session's own check: it takes nothing.
        guard try Bool.fetchOne(db, sql: "SELECT revoked_at IS NULL FROM devices WHERE id = ?", arguments: [identity.id]) == true else {
            throw DeviceRegistry.AuthError(.unauthorized, DeviceRegistry.AuthError.notAuthenticated)
        }
        guard pending == chain else {
            throw DeviceRegistry.AuthError(.forbidden, "this device was enrolled with a restore token for chain \(pending.prefix(16)) but named chain \(chain.prefix(16)), "
                                           + "the one its key files make: they are not the key files of the device it replaces, and nothing was taken over. Put the old device's "
                                           + "key files in HOME/keys of a new home (or after `hp-node reset --yes-delete-archive`) and run `hp-node restore` again")
        }
        // Mid-session, a chain the device may not take is `forbidden`, as any chain it may not name.
        try refuseStale(db, device: identity.id, redeemed: true)
        let previous = try Row.fetchOne(db, sql: "SELECT d.id, d.name FROM chain_owners o JOIN devices d ON d.id = o.device_id WHERE o.device_chain_hash = ?", arguments: [chain])
        try db.execute(sql: """
            INSERT INTO chain_owners(device_chain_hash, device_id, bound_at) VALUES (?, ?, ?)
            ON CONFLICT(device_chain_hash) DO UPDATE SET device_id = excluded.device_id, bound_at = excluded.bound_at
            """, arguments: [chain, identity.id, now])
        try db.execute(sql: "DELETE FROM chain_restores WHERE device_id = ?", arguments: [identity.id])
        if let previous, (previous["id"] as Int64) != identity.id {
            try db.execute(sql: "UPDATE devices SET replaced_by_device_id = ? WHERE id = ?", arguments: [identity.id, previous["id"] as Int64])
        }
        try Audit.record(db, Audit.Actor(name: identity.name, via: .device), .chainTransfer, target: chain, detail: "from \((previous?["name"] as String?) ?? "no device") to \(identity.name)")
    }
}

extension DeviceRegistry {
    /// Issues `name`'s enrollment token as a replacement for the device that owns `chain`:
    /// the new device belongs to that device's person, and takes the chain over when it
    /// first names it. Refused when the chain has no owner, or `person` is someone else.
    /// Returns the token's secret and the name of the device it replaces.
    public func issueRestoreToken(name: String, chain: String, person: Int64?, now: Double, by actor: Audit.Actor = .cli) throws -> (secret: String, replacing: String) {
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
                INSERT INTO chain_restores(device_id, device_chain_hash, issued_at, replaced_device_id)
                SELECT id, ?, ?, (SELECT device_id FROM chain_owners WHERE device_chain_hash = ?) FROM devices WHERE name = ?
                ON CONFLICT(device_id) DO UPDATE SET device_chain_hash = excluded.device_chain_hash, issued_at = excluded.issued_at,
                    replaced_device_id = excluded.replaced_device_id
                """, arguments: [chain, now, chain, name])
            try Audit.record(db, actor, .chainRestoreToken, target: chain, detail: "for \(name), replacing \(owner["name"] as String)")
            return (secret, owner["name"])
        }
    }

    /// Whether `identity` may fetch `chain`'s bundles: only the device that owns it (a
    /// replacement device takes its restore token's chain over here).
    public func authorizeRestore(_ identity: Identity, chain: String, now: Double = Date().timeIntervalSince1970) throws {
        try takeOverPending(identity, chain: chain, now: now)
        let owner = try database.read { db in
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT device_id FROM chain_owners WHERE device_chain_hash = ?"), arguments: [chain])
        }
        guard owner == identity.id else {
            throw AuthError(.forbidden, "this device's credential does not own chain \(chain.prefix(16)); a device restores only its own chain (a replacement device needs a restore token: hp-server enroll --restore-chain)")
        }
    }

    /// `ChainRestores.takeOver` for a device that redeemed a restore token (a read first: one
    /// without stays out of write transactions).
    func takeOverPending(_ identity: Identity, chain: String, now: Double) throws {
        guard try database.read({ try ChainRestores.pending($0, device: identity.id) }) != nil else { return }
        try database.write { try ChainRestores.takeOver($0, identity, chain: chain, now: now) }
    }
}
