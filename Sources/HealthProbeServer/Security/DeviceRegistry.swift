import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeProtocol
import HealthProbeCanonical

/// The server's registry (`<data>/server.sqlite`): enrolled devices and their
/// credentials (only hashes are stored), which device owns which chain, what
/// each chain's last sync saw, and integrity events for the administrator.
/// Replicas stay one file per chain; this file never holds health records.
public final class DeviceRegistry: Sendable {
    /// A pool: reads (authentication, ownership) never wait behind a commit.
    public let database: DatabasePool

    /// Why a peer was refused.
    public struct AuthError: CodedError {
        /// `notFound`: no such person or device; `conflict`: the registry's state forbids it
        /// (the last admin, a person who has devices, a device already revoked).
        public enum Code: String, Sendable { case unauthorized, forbidden, invalidName = "invalid_name", duplicate, notFound = "not_found", conflict }
        public let code: Code
        public var codeName: String? { code.rawValue }
        public let message: String
        public var cause: (any Error)? { nil }
        public init(_ code: Code, _ message: String) { self.code = code; self.message = message }
        /// What a refused credential is told, whichever check refused it.
        static let notAuthenticated = "not authenticated: unknown device, wrong credential, or revoked"
    }

    public struct Device: Sendable, Codable, Equatable {
        public var name: String
        public var createdAt: Double
        public var enrolledAt: Double?
        public var revokedAt: Double?
        public var chains: [String]
        /// The person the device belongs to; nil for a device enrolled before anyone was added.
        public var person: String?
        /// What the device may do now.
        public var state: State
        /// When its unused enrollment token stops working; nil once redeemed or revoked.
        public var tokenExpiresAt: Double?
        /// The chain its restore token names, until the device takes it over (`ChainRestores`).
        public var restoreChain: String?
        /// The device that took a chain over from this one with a restore token.
        public var replacedBy: String?
        /// What an administrator does about the device, when its state asks for something.
        public var advice: String?

        public enum State: String, Sendable, Codable {
            case enrolled, revoked
            /// An enrollment token not redeemed yet, or past its 24 hours.
            case tokenIssued = "token_issued", tokenExpired = "token_expired"
            /// A restore token not redeemed yet; redeemed, the device is `restoring` until it
            /// takes the chain over. Stale: the chain moved to another device since the token
            /// was issued, so it takes nothing (revoke the device, issue one under a new name).
            case restoreTokenIssued = "restore_token_issued", restoring, restoreTokenStale = "restore_token_stale"
            /// Enrolled, but a replacement device took its chain over and it holds none: its
            /// credential still authenticates, and it should be revoked.
            case replaced

            /// As `hp-server devices` and the admin page show it.
            public var label: String {
                switch self {
                case .enrolled: "enrolled"
                case .revoked: "revoked"
                case .tokenIssued: "token issued"
                case .tokenExpired: "token expired"
                case .restoreTokenIssued: "restore token issued"
                case .restoring: "enrolled, takes its chain over when it asks"
                case .restoreTokenStale: "restore token stale"
                case .replaced: "replaced"
                }
            }
        }
    }

    public struct IntegrityEvent: Sendable, Codable, Equatable {
        public var recordedAt: Double
        public var chain: String?
        public var sequence: Int?
        public var kind: String
        public var device: String?
        public var detail: String
    }

    /// An authenticated device.
    public struct Identity: Sendable, Equatable {
        public let id: Int64
        public let name: String

        public init(id: Int64, name: String) {
            self.id = id
            self.name = name
        }
    }

    /// How long an enrollment token can be redeemed.
    public static let tokenLifetime: Double = 24 * 3600

    public init(path: String) throws {
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(5)
        // WAL: one sync per commit (the rollback journal took several) while the
        // server records a sync per bundle, and readers (`hp-server summary`) never wait.
        config.journalMode = .wal
        database = try DatabasePool(path: path, configuration: config)
        try Self.migrator.migrate(database)
    }

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE devices (
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL UNIQUE,
                    created_at REAL NOT NULL,
                    enrollment_secret_hash TEXT,
                    enrollment_expires_at REAL,
                    enrolled_at REAL,
                    credential_hash TEXT UNIQUE,
                    revoked_at REAL
                );
                CREATE TABLE chain_owners (
                    device_chain_hash TEXT PRIMARY KEY,
                    device_id INTEGER NOT NULL REFERENCES devices(id),
                    bound_at REAL NOT NULL
                );
                CREATE TABLE chain_syncs (
                    device_chain_hash TEXT PRIMARY KEY,
                    last_sync_at REAL NOT NULL,
                    clock_offset_seconds REAL
                );
                CREATE TABLE integrity_events (
                    id INTEGER PRIMARY KEY,
                    recorded_at REAL NOT NULL,
                    device_chain_hash TEXT,
                    sequence INTEGER,
                    kind TEXT NOT NULL,
                    device_name TEXT,
                    detail TEXT NOT NULL
                );
                """)
        }
        m.registerMigration("v2 people") { db in try People.migrate(db) }
        m.registerMigration("v3 web sessions") { db in try WebSessions.migrate(db) }
        m.registerMigration("v4 chain contacts") { db in try ChainContact.migrate(db) }
        m.registerMigration("v5 audit log") { db in try Audit.migrate(db) }
        m.registerMigration("v6 alerts") { db in try AlertTables.migrate(db) }
        m.registerMigration("v7 alert loss") { db in try AlertLoss.migrate(db) }
        m.registerMigration("v8 verify schedule") { db in try VerifySchedule.migrate(db) }
        m.registerMigration("v9 offsite uploads") { db in try OffsiteQueue.migrate(db) }
        m.registerMigration("v10 chain restores") { db in try ChainRestores.migrate(db) }
        m.registerMigration("v11 quiet hours zone") { db in try QuietHours.migrate(db) }
        m.registerMigration("v12 offsite snapshots") { db in try SnapshotWriters.migrate(db) }
        m.registerMigration("v13 offsite snapshot due") { db in try SnapshotWriters.migrateDue(db) }
        m.registerMigration("v14 offsite snapshot due served") { db in try SnapshotWriters.migrateDueServed(db) }
        m.registerMigration("v15 chain restores name the device replaced") { db in try ChainRestores.migrateReplaced(db) }
        m.registerMigration("v16 devices name their replacement") { db in try ChainRestores.migrateReplacedBy(db) }
        return m
    }

    /// Names: 1 to 64 characters of letters, digits, `.`, `_` and `-`.
    public static func isValidName(_ name: String) -> Bool { DeviceName.isValid(name) }

    /// Registers `name` and returns its one-time enrollment secret. Issuing again
    /// for a name that has not redeemed its token replaces the token; an enrolled
    /// or revoked name is refused (pick a new name).
    /// The device belongs to `person` (a `people` id); nil leaves it unassigned, seen by admins only.
    public func issueToken(name: String, person: Int64? = nil, now: Double, by actor: Audit.Actor = .cli) throws -> String {
        try database.write { db in try Self.issueToken(db, name: name, person: person, now: now, by: actor) }
    }

    /// `issueToken` inside the caller's transaction.
    static func issueToken(_ db: Database, name: String, person: Int64?, now: Double, by actor: Audit.Actor) throws -> String {
        guard isValidName(name) else {
            throw AuthError(.invalidName, "device names are 1 to 64 ASCII letters, digits, '.', '_' or '-'")
        }
        let secret = EnrollmentToken.randomSecret()
        let hash = ArchiveHasher.sha256(.enrollmentSecret, secret)
        if let row = try Row.fetchOne(db, sql: "SELECT enrolled_at, revoked_at FROM devices WHERE name = ?", arguments: [name]) {
            guard (row["enrolled_at"] as Double?) == nil, (row["revoked_at"] as Double?) == nil else {
                throw AuthError(.duplicate, "a device named \(name) is already enrolled (or was revoked); give the device a new name")
            }
            try db.execute(sql: "UPDATE devices SET enrollment_secret_hash = ?, enrollment_expires_at = ?, person_id = coalesce(?, person_id) WHERE name = ?",
                           arguments: [hash, now + tokenLifetime, person, name])
        } else {
            try db.execute(sql: "INSERT INTO devices(name, created_at, enrollment_secret_hash, enrollment_expires_at, person_id) VALUES (?, ?, ?, ?, ?)",
                           arguments: [name, now, hash, now + tokenLifetime, person])
        }
        // A token issued again without a chain is a plain enrollment.
        try db.execute(sql: "DELETE FROM chain_restores WHERE device_id = (SELECT id FROM devices WHERE name = ?)", arguments: [name])
        let owner = try person.flatMap { try String.fetchOne(db, sql: "SELECT name FROM people WHERE id = ?", arguments: [$0]) }
        try Audit.record(db, actor, .deviceToken, target: name, detail: owner.map { "for \($0)" } ?? "")
        return secret
    }

    /// Redeems a one-time enrollment secret: returns the device's new long-term
    /// credential. A used, expired or wrong secret is refused the same way.
    public func redeem(name: String, secret: String, now: Double) throws -> (Identity, String) {
        let credential = EnrollmentToken.randomSecret()
        return try database.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT id, enrollment_secret_hash, enrollment_expires_at, revoked_at FROM devices WHERE name = ?", arguments: [name]),
                  let expected: String = row["enrollment_secret_hash"], (row["revoked_at"] as Double?) == nil,
                  let expires: Double = row["enrollment_expires_at"], now <= expires,
                  ArchiveHasher.constantTimeEqual(expected, ArchiveHasher.sha256(.enrollmentSecret, secret)) else {
                throw AuthError(.unauthorized, "the enrollment token is not valid (wrong, already used, expired or revoked); ask the administrator for a new one")
            }
            let id: Int64 = row["id"]
            try db.execute(sql: "UPDATE devices SET enrollment_secret_hash = NULL, enrollment_expires_at = NULL, enrolled_at = ?, credential_hash = ? WHERE id = ?",
                           arguments: [now, ArchiveHasher.sha256(.credential, credential), id])
            // A replacement device's token issued before its chain moved since takes nothing; one
            // that may takes its chain over when the device first names it (`ChainRestores.takeOver`).
            try ChainRestores.refuseStale(db, device: id)
            return (Identity(id: id, name: name), credential)
        }
    }

    /// The device whose credential this is, unless revoked.
    public func authenticate(name: String, credential: String) throws -> Identity {
        try database.read { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT id, credential_hash, revoked_at FROM devices WHERE name = ?"), arguments: [name]),
                  let expected: String = row["credential_hash"], (row["revoked_at"] as Double?) == nil,
                  ArchiveHasher.constantTimeEqual(expected, ArchiveHasher.sha256(.credential, credential)) else {
                throw AuthError(.unauthorized, AuthError.notAuthenticated)
            }
            return Identity(id: row["id"], name: name)
        }
    }

    /// Whether `identity` is still allowed (it may have been revoked since it authenticated).
    public func isActive(_ identity: Identity) throws -> Bool {
        try database.read { db in try Bool.fetchOne(db.cachedStatement(sql: "SELECT revoked_at IS NULL FROM devices WHERE id = ?"), arguments: [identity.id]) ?? false }
    }

    /// Revokes a device: its credential and any unused token stop working at once.
    public func revoke(name: String, now: Double, by actor: Audit.Actor = .cli) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE devices SET revoked_at = ?, enrollment_secret_hash = NULL WHERE name = ? AND revoked_at IS NULL", arguments: [now, name])
            guard db.changesCount == 1 else {
                guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM devices WHERE name = ?)", arguments: [name])! else {
                    throw AuthError(.notFound, "no device named \(name) (see `hp-server devices`)")
                }
                throw AuthError(.conflict, "\(name) is already revoked")
            }
            try Audit.record(db, actor, .deviceRevoke, target: name)
        }
    }

    /// Read access: a chain owned by another device is forbidden; an unowned one is allowed.
    public func authorizeRead(_ identity: Identity, chain: String, now: Double = Date().timeIntervalSince1970) throws {
        try takeOverPending(identity, chain: chain, now: now)
        let owner = try database.read { db in
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT device_id FROM chain_owners WHERE device_chain_hash = ?"), arguments: [chain])
        }
        if let owner, owner != identity.id {
            throw AuthError(.forbidden, "this device's credential does not own chain \(chain.prefix(16)): another device holds it (a replacement device may have taken it over with a restore token); a device reads and writes only the chains it holds. An administrator sees who holds it with `hp-server devices`")
        }
    }

    /// Write access: binds an unowned chain to `identity`; a chain owned by another device is forbidden.
    /// Binds an unbound `chain` to the device, or checks that the device owns it.
    /// True when this call bound it (the caller releases it if the bundle is refused).
    @discardableResult
    public func claim(_ identity: Identity, chain: String, now: Double) throws -> Bool {
        try takeOverPending(identity, chain: chain, now: now)
        // Every bundle claims its chain; once bound, a read answers without a write transaction.
        let owner = try database.read { db in
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT device_id FROM chain_owners WHERE device_chain_hash = ?"), arguments: [chain])
        }
        if owner == identity.id { return false }
        return try database.write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO chain_owners(device_chain_hash, device_id, bound_at) VALUES (?, ?, ?)", arguments: [chain, identity.id, now])
            let bound = db.changesCount > 0
            let owner = try Int64.fetchOne(db.cachedStatement(sql: "SELECT device_id FROM chain_owners WHERE device_chain_hash = ?"), arguments: [chain])
            guard owner == identity.id else {
                throw AuthError(.forbidden, "this device's credential does not own chain \(chain.prefix(16)): another device holds it (a replacement device may have taken it over with a restore token); a device reads and writes only the chains it holds. An administrator sees who holds it with `hp-server devices`")
            }
            return bound
        }
    }

    /// Undoes a `claim` that bound `chain` for a bundle that was then refused: only an
    /// accepted bundle binds a chain (Protocol/README.md section 7).
    public func release(_ identity: Identity, chain: String) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM chain_owners WHERE device_chain_hash = ? AND device_id = ?", arguments: [chain, identity.id])
        }
    }

    /// Records that `chain` synced now, with the device clock's offset (device minus server, seconds).
    public func recordSync(chain: String, now: Double, clockOffset: Double?) throws {
        try database.write { db in
            try db.cachedStatement(sql: """
                INSERT INTO chain_syncs(device_chain_hash, last_sync_at, clock_offset_seconds) VALUES (?, ?, ?)
                ON CONFLICT(device_chain_hash) DO UPDATE SET last_sync_at = excluded.last_sync_at, clock_offset_seconds = excluded.clock_offset_seconds
                """).execute(arguments: [chain, now, clockOffset])
        }
    }

    /// Owner name, last good sync and the clock offset last measured of a chain.
    public func chainInfo(_ chain: String) throws -> (device: String?, lastSync: Double?, clockOffset: Double?) {
        let f = try chainFacts(chain)
        return (f.device, f.lastSync, f.clockOffset)
    }

    public func recordEvent(kind: String, chain: String?, sequence: Int?, device: String?, detail: String, now: Double) throws {
        try database.write { db in
            try db.execute(sql: "INSERT INTO integrity_events(recorded_at, device_chain_hash, sequence, kind, device_name, detail) VALUES (?, ?, ?, ?, ?, ?)",
                           arguments: [now, chain, sequence, kind, device, detail])
        }
    }

    public func events(chain: String? = nil) throws -> [IntegrityEvent] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM integrity_events WHERE ? IS NULL OR device_chain_hash = ? ORDER BY id
                """, arguments: [chain, chain]).map {
                IntegrityEvent(recordedAt: $0["recorded_at"], chain: $0["device_chain_hash"], sequence: $0["sequence"], kind: $0["kind"],
                               device: $0["device_name"], detail: $0["detail"])
            }
        }
    }

    /// Every device, by name, with its state at `now`.
    public func devices(now: Double = Date().timeIntervalSince1970) throws -> [Device] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT d.*, p.name AS person_name, r.name AS replaced_by FROM devices d LEFT JOIN people p ON p.id = d.person_id
                LEFT JOIN devices r ON r.id = d.replaced_by_device_id ORDER BY d.name
                """).map { r in
                let id: Int64 = r["id"]
                let chains = try String.fetchAll(db, sql: "SELECT device_chain_hash FROM chain_owners WHERE device_id = ? ORDER BY device_chain_hash", arguments: [id])
                let enrolledAt: Double? = r["enrolled_at"], revokedAt: Double? = r["revoked_at"]
                let expires: Double? = enrolledAt == nil && revokedAt == nil ? r["enrollment_expires_at"] : nil
                let restore = revokedAt == nil ? try ChainRestores.restore(db, device: id) : nil
                // A stale restore token is said first: issued again, it would take the chain from its new holder.
                let expired = expires.map { now > $0 } ?? false
                let state: Device.State = if revokedAt != nil { .revoked }
                    else if let restore { restore.stale ? .restoreTokenStale : expired ? .tokenExpired : enrolledAt == nil ? .restoreTokenIssued : .restoring }
                    else if expired { .tokenExpired }
                    else if enrolledAt == nil { .tokenIssued }
                    else { chains.isEmpty && r["replaced_by"] != nil ? .replaced : .enrolled }
                var device = Device(name: r["name"], createdAt: r["created_at"], enrolledAt: enrolledAt, revokedAt: revokedAt, chains: chains,
                                    person: r["person_name"], state: state, tokenExpiresAt: expires, restoreChain: restore?.chain, replacedBy: r["replaced_by"])
                device.advice = device.whatToDo
                return device
            }
        }
    }

}

extension DeviceRegistry.Device {
    /// The chain a restore token will take over, while it still may (not stale, not expired).
    var restoring: String? { state == .restoreTokenIssued || state == .restoring ? restoreChain : nil }

    /// Its chains as a list shows them: each hash's first 12 digits, then the chain its
    /// restore token will take over (`restoring`), marked as such.
    public var shownChains: [String] {
        chains.map { String($0.prefix(12)) } + (restoring.map { ["(restores \($0.prefix(12)))"] } ?? [])
    }

    /// What an administrator does about a device whose token no longer works, or that a
    /// replacement took its chain from; nil when nothing is to be done.
    var whatToDo: String? {
        switch state {
        case .tokenExpired where restoreChain != nil:
            "its restore token expired unused; if it is still meant, issue a new one with `hp-server enroll --name \(name) --restore-chain \(restoreChain!.prefix(12))`"
        case .tokenExpired:
            "its token expired unused; issue a new one with `hp-server enroll --name \(name)\(person.map { " --person \($0)" } ?? "")`"
        case .restoreTokenStale where enrolledAt == nil:
            "its restore token was issued before the chain moved to another device and takes nothing; if it is still meant, issue a new one with `hp-server enroll --name \(name) --restore-chain \(restoreChain!.prefix(12))`"
        case .restoreTokenStale:
            "enrolled with a restore token issued before the chain moved to another device; it takes nothing. Revoke it (`hp-server revoke \(name)`) and, if still meant, issue a restore token under a new name"
        case .replaced:
            "\(replacedBy ?? "a replacement device") took its chain over and it holds none, but its credential still works; revoke it (`hp-server revoke \(name)`)"
        case .enrolled, .revoked, .tokenIssued, .restoreTokenIssued, .restoring:
            nil
        }
    }
}
