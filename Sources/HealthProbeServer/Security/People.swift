import Foundation
import GRDB
import HealthProbeProtocol
import HummingbirdBcrypt

/// The people of a household, their roles, and which chains are shared with whom.
/// Each device belongs to one person; a chain belongs to the person of the device
/// that created it. Passwords are stored as bcrypt hashes only.
public enum People {
    /// What a person may do.
    public enum Role: String, Sendable, Codable, CaseIterable {
        /// Everything: people, devices, tokens, revocation, verification, every chain.
        case admin
        /// Their own chains and the chains shared with them; may share their own chains.
        case member
        /// Only the chains shared with them, read-only.
        case viewer
    }

    public struct Person: Sendable, Codable, Equatable {
        public var id: Int64
        public var name: String
        public var role: Role
        public var createdAt: Double
        public var hasPassword: Bool
        /// Devices that belong to this person.
        public var devices: [String]
    }

    /// One chain shared with one person.
    public struct Share: Sendable, Codable, Equatable {
        public var chain: String
        public var person: String
        public var sharedAt: Double
    }

    /// The name given to the person that existing devices belong to after an upgrade.
    public static let upgradePerson = "household"

    /// Passwords: 12 to 256 characters.
    public static let passwordLength = 12...256

    /// Registry migration "v2 people" (with the last verification of each chain). Existing devices get a person on upgrade: an
    /// `admin` named `household`, without a password until one is set.
    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE people (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                role TEXT NOT NULL CHECK (role IN ('admin', 'member', 'viewer')),
                password_hash TEXT,
                created_at REAL NOT NULL
            );
            ALTER TABLE devices ADD COLUMN person_id INTEGER REFERENCES people(id);
            CREATE TABLE chain_shares (
                device_chain_hash TEXT NOT NULL,
                person_id INTEGER NOT NULL REFERENCES people(id) ON DELETE CASCADE,
                shared_at REAL NOT NULL,
                PRIMARY KEY (device_chain_hash, person_id)
            ) WITHOUT ROWID;
            CREATE INDEX idx_chain_shares_person ON chain_shares(person_id);
            CREATE TABLE verifications (
                device_chain_hash TEXT PRIMARY KEY,
                checked_at REAL NOT NULL,
                mode TEXT NOT NULL,
                ok INTEGER NOT NULL,
                bundles INTEGER NOT NULL,
                problems TEXT NOT NULL
            );
            CREATE INDEX idx_devices_person ON devices(person_id);
            INSERT INTO people(name, role, created_at)
                SELECT 'household', 'admin', CAST(strftime('%s', 'now') AS REAL) WHERE EXISTS (SELECT 1 FROM devices);
            UPDATE devices SET person_id = (SELECT id FROM people WHERE name = 'household') WHERE person_id IS NULL;
            """)
    }
}

extension DeviceRegistry {
    /// Adds a person. Names follow the device-name rule.
    @discardableResult
    public func addPerson(name: String, role: People.Role, password: String?, now: Double, cost: UInt8 = PasswordHashing.defaultCost,
                          by actor: Audit.Actor = .cli) throws -> People.Person {
        guard DeviceName.isValid(name) else {
            throw AuthError(.invalidName, "person names are 1 to 64 ASCII letters, digits, '.', '_' or '-'")
        }
        let hash = try password.map { try PasswordHashing.hash($0, cost: cost) }
        try database.write { db in
            guard try !Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM people WHERE name = ?)", arguments: [name])! else {
                throw AuthError(.duplicate, "a person named \(name) exists (see `hp-server person list`)")
            }
            try db.execute(sql: "INSERT INTO people(name, role, password_hash, created_at) VALUES (?, ?, ?, ?)",
                           arguments: [name, role.rawValue, hash, now])
            try Audit.record(db, actor, .personAdd, target: name, detail: "as \(role.rawValue)")
        }
        return try person(named: name)!
    }

    /// Sets (or replaces) a person's password.
    public func setPassword(person name: String, password: String, cost: UInt8 = PasswordHashing.defaultCost, by actor: Audit.Actor = .cli) throws {
        let hash = try PasswordHashing.hash(password, cost: cost)
        try database.write { db in
            try db.execute(sql: "UPDATE people SET password_hash = ? WHERE name = ?", arguments: [hash, name])
            guard db.changesCount == 1 else { throw AuthError(.notFound, "no person named \(name) (see `hp-server person list`)") }
            // A new password ends every session signed in with the old one.
            try WebSessions.end(db, personID: try Self.personID(db, name))
            try Audit.record(db, actor, .personPassword, target: name, detail: "sessions ended")
        }
    }

    /// Changes a person's role; the last admin keeps theirs, and a person with devices is not made a viewer.
    public func setRole(person name: String, role: People.Role, by actor: Audit.Actor = .cli) throws {
        try database.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT id, role FROM people WHERE name = ?", arguments: [name]) else {
                throw AuthError(.notFound, "no person named \(name) (see `hp-server person list`)")
            }
            if (row["role"] as String) == People.Role.admin.rawValue, role != .admin, try Self.adminCount(db) == 1 {
                throw AuthError(.conflict, "\(name) is the last admin; make another person admin first")
            }
            if role == .viewer, try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM devices WHERE person_id = ?)", arguments: [row["id"] as Int64])! {
                throw AuthError(.conflict, "\(name) has devices; a viewer cannot own devices (give them to another person first)")
            }
            try db.execute(sql: "UPDATE people SET role = ? WHERE name = ?", arguments: [role.rawValue, name])
            // A changed role ends the person's sessions: they sign in again under the new one.
            if (row["role"] as String) != role.rawValue {
                try WebSessions.end(db, personID: row["id"])
                try Audit.record(db, actor, .personRole, target: name, detail: "\(row["role"] as String) to \(role.rawValue)")
            }
        }
    }

    /// Removes a person with no devices; their shares go with them. The last admin stays.
    public func removePerson(name: String, by actor: Audit.Actor = .cli) throws {
        try database.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT id, role FROM people WHERE name = ?", arguments: [name]) else {
                throw AuthError(.notFound, "no person named \(name) (see `hp-server person list`)")
            }
            let id: Int64 = row["id"]
            let devices = try String.fetchAll(db, sql: "SELECT name FROM devices WHERE person_id = ? ORDER BY name", arguments: [id])
            guard devices.isEmpty else {
                throw AuthError(.conflict, "\(name) still has devices (\(devices.joined(separator: ", "))); give them to another person first with `hp-server person give DEVICE --to PERSON`")
            }
            if (row["role"] as String) == People.Role.admin.rawValue, try Self.adminCount(db) == 1 {
                throw AuthError(.conflict, "\(name) is the last admin; make another person admin first")
            }
            try WebSessions.end(db, personID: id)
            try db.execute(sql: "DELETE FROM people WHERE id = ?", arguments: [id])
            try Audit.record(db, actor, .personRemove, target: name)
        }
    }

    /// Gives a device (and so its chains) to another person.
    public func giveDevice(_ device: String, to person: String, by actor: Audit.Actor = .cli) throws {
        try database.write { db in
            let pid = try Self.personID(db, person)
            try db.execute(sql: "UPDATE devices SET person_id = ? WHERE name = ?", arguments: [pid, device])
            guard db.changesCount == 1 else { throw AuthError(.notFound, "no device named \(device) (see `hp-server devices`)") }
            try Audit.record(db, actor, .deviceGive, target: device, detail: "to \(person)")
        }
    }

    /// The person a new device token is issued for: `name`, or the only person when nil.
    public func personForEnrollment(_ name: String?) throws -> Int64 {
        try database.read { db in
            if let name {
                let row = try Row.fetchOne(db, sql: "SELECT id, role FROM people WHERE name = ?", arguments: [name])
                guard let row else { throw AuthError(.notFound, "no person named \(name); add one with `hp-server person add \(name) --role member`") }
                guard (row["role"] as String) != People.Role.viewer.rawValue else {
                    throw AuthError(.forbidden, "\(name) is a viewer and cannot own devices; make them a member first")
                }
                return row["id"]
            }
            let ids = try Int64.fetchAll(db, sql: "SELECT id FROM people WHERE role != 'viewer' ORDER BY id LIMIT 2")
            guard ids.count == 1 else {
                throw AuthError(.invalidName, ids.isEmpty
                    ? "the household has no people yet; add one with `hp-server person add NAME --role admin`, then enroll with --person NAME"
                    : "the household has several people; say whose device this is with --person NAME")
            }
            return ids[0]
        }
    }

    public func people() throws -> [People.Person] {
        try database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM people ORDER BY name").map { try Self.person(db, $0) } }
    }

    public func person(named name: String) throws -> People.Person? {
        try database.read { db in try Row.fetchOne(db, sql: "SELECT * FROM people WHERE name = ?", arguments: [name]).map { try Self.person(db, $0) } }
    }

    public func person(id: Int64) throws -> People.Person? {
        try database.read { db in try Row.fetchOne(db, sql: "SELECT * FROM people WHERE id = ?", arguments: [id]).map { try Self.person(db, $0) } }
    }

    /// The person whose password this is, or nil. Unknown names cost a hash too,
    /// so the answer's timing does not tell which names exist.
    public func checkPassword(name: String, password: String) throws -> People.Person? {
        let stored = try database.read { db in
            try String.fetchOne(db, sql: "SELECT password_hash FROM people WHERE name = ?", arguments: [name])
        }
        guard let stored else {
            _ = PasswordHashing.verify(password, hash: PasswordHashing.decoy)
            return nil
        }
        guard PasswordHashing.verify(password, hash: stored) else { return nil }
        return try person(named: name)
    }

    /// Shares a chain with a person (read-only for them).
    public func share(chain: String, with person: String, now: Double, by actor: Audit.Actor = .cli) throws {
        try database.write { db in
            let pid = try Self.personID(db, person)
            let owner = try Int64.fetchOne(db, sql: """
                SELECT d.person_id FROM chain_owners o JOIN devices d ON d.id = o.device_id WHERE o.device_chain_hash = ?
                """, arguments: [chain])
            guard owner != pid else {
                throw AuthError(.conflict, "chain \(chain.prefix(16)) is \(person)'s own; a person reads their own chains without sharing")
            }
            try db.execute(sql: "INSERT OR IGNORE INTO chain_shares(device_chain_hash, person_id, shared_at) VALUES (?, ?, ?)", arguments: [chain, pid, now])
            if db.changesCount > 0 { try Audit.record(db, actor, .chainShare, target: chain, detail: "with \(person)") }
        }
    }

    /// Takes a shared chain back.
    public func unshare(chain: String, from person: String, by actor: Audit.Actor = .cli) throws {
        try database.write { db in
            let pid = try Self.personID(db, person)
            try db.execute(sql: "DELETE FROM chain_shares WHERE device_chain_hash = ? AND person_id = ?", arguments: [chain, pid])
            guard db.changesCount == 1 else { throw AuthError(.notFound, "chain \(chain.prefix(16)) is not shared with \(person)") }
            try Audit.record(db, actor, .chainUnshare, target: chain, detail: "from \(person)")
        }
    }

    public func shares(chain: String? = nil) throws -> [People.Share] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT s.device_chain_hash, p.name, s.shared_at FROM chain_shares s JOIN people p ON p.id = s.person_id
                WHERE ? IS NULL OR s.device_chain_hash = ? ORDER BY s.device_chain_hash, p.name
                """, arguments: [chain, chain]).map { People.Share(chain: $0[0], person: $0[1], sharedAt: $0[2]) }
        }
    }

    /// The person a chain belongs to (through the device that created it).
    public func chainPerson(_ chain: String) throws -> String? {
        try database.read { db in
            try String.fetchOne(db, sql: """
                SELECT p.name FROM chain_owners o JOIN devices d ON d.id = o.device_id JOIN people p ON p.id = d.person_id
                WHERE o.device_chain_hash = ?
                """, arguments: [chain])
        }
    }

    /// Whether `person` may read `chain`: an admin reads every chain, a member their
    /// own and shared ones, a viewer shared ones only. The one rule for the web, the API,
    /// the sync protocol's `HOUSEHOLD` and alerts (`readableChains` states it as a set).
    public func canRead(_ person: People.Person, chain: String) throws -> Bool {
        if person.role == .admin { return true }
        return try database.read { db in try Self.readable(db, person).contains(chain) }
    }

    /// The chains `person` may read among `chains`, in their order (the same rule as `canRead`,
    /// read in one query whatever the number of chains).
    public func readableChains(_ person: People.Person, among chains: [String]) throws -> [String] {
        if person.role == .admin { return chains }
        let readable = try database.read { db in try Self.readable(db, person) }
        return chains.filter { readable.contains($0) }
    }

    /// The person a device belongs to (nil for a device no person owns).
    public func person(of device: Identity) throws -> People.Person? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT p.* FROM devices d JOIN people p ON p.id = d.person_id WHERE d.id = ?", arguments: [device.id])
                .map { try Self.person(db, $0) }
        }
    }

    /// The chains an authenticated device may read over sync, among `chains`: those its
    /// person may read (`readableChains`); a device no person owns reads only its own chains.
    public func readableChains(device: Identity, among chains: [String]) throws -> [String] {
        if let person = try person(of: device) { return try readableChains(person, among: chains) }
        let own = try database.read { db in
            Set(try String.fetchAll(db, sql: "SELECT device_chain_hash FROM chain_owners WHERE device_id = ?", arguments: [device.id]))
        }
        return chains.filter { own.contains($0) }
    }

    /// Chains shared with a non-admin `person`, and for a member the chains of their devices.
    static func readable(_ db: Database, _ person: People.Person) throws -> Set<String> {
        Set(try String.fetchAll(db, sql: """
            SELECT device_chain_hash FROM chain_shares WHERE person_id = :person
            UNION
            SELECT o.device_chain_hash FROM chain_owners o JOIN devices d ON d.id = o.device_id
            WHERE d.person_id = :person AND :member
            """, arguments: ["person": person.id, "member": person.role == .member]))
    }

    /// Whether `person` may share `chain` or take it back: admins, and members for their own chains.
    public func canShare(_ person: People.Person, chain: String) throws -> Bool {
        switch person.role {
        case .admin: return true
        case .viewer: return false
        case .member:
            return try database.read { db in
                try Bool.fetchOne(db, sql: """
                    SELECT EXISTS (SELECT 1 FROM chain_owners o JOIN devices d ON d.id = o.device_id WHERE o.device_chain_hash = ? AND d.person_id = ?)
                    """, arguments: [chain, person.id])!
            }
        }
    }

    static func personID(_ db: Database, _ name: String) throws -> Int64 {
        guard let id = try Int64.fetchOne(db, sql: "SELECT id FROM people WHERE name = ?", arguments: [name]) else {
            throw AuthError(.notFound, "no person named \(name) (see `hp-server person list`)")
        }
        return id
    }

    static func adminCount(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM people WHERE role = 'admin'")!
    }

    static func person(_ db: Database, _ row: Row) throws -> People.Person {
        let id: Int64 = row["id"]
        let roleText: String = row["role"]
        guard let role = People.Role(rawValue: roleText) else {
            throw AuthError(.invalidName, "person \(id) has an unknown role in the registry")
        }
        return People.Person(id: id, name: row["name"], role: role, createdAt: row["created_at"],
                             hasPassword: (row["password_hash"] as String?) != nil,
                             devices: try String.fetchAll(db, sql: "SELECT name FROM devices WHERE person_id = ? ORDER BY name", arguments: [id]))
    }
}

/// bcrypt from hummingbird-auth, with the checks around it.
public enum PasswordHashing {
    /// bcrypt's cost: 2^12 rounds, about a quarter second per check on this class of machine.
    public static let defaultCost: UInt8 = 12

    /// A hash no password matches in practice, checked for unknown names.
    static let decoy = Bcrypt.hash("healthprobe-decoy-password", cost: 4)

    public static func hash(_ password: String, cost: UInt8) throws -> String {
        guard People.passwordLength.contains(password.count) else {
            throw DeviceRegistry.AuthError(.invalidName, "passwords are \(People.passwordLength.lowerBound) to \(People.passwordLength.upperBound) characters")
        }
        return Bcrypt.hash(password, cost: cost)
    }

    public static func verify(_ password: String, hash: String) -> Bool {
        guard People.passwordLength.contains(password.count) else { return false }
        return Bcrypt.verify(password, hash: hash)
    }
}
