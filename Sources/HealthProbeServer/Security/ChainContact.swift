import Foundation
import GRDB

/// What the server knows of each chain's device beyond its last good sync: when it last
/// made contact and when, and why, the server last refused it. A refused sync never
/// counts as a sync (`chain_syncs` holds good syncs only).
public enum ChainContact {
    /// Registry migration "v4 chain contacts".
    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE chain_contacts (
                device_chain_hash TEXT PRIMARY KEY,
                last_contact_at REAL NOT NULL,
                clock_offset_seconds REAL,
                last_refused_at REAL,
                last_refusal_code TEXT,
                last_refusal_detail TEXT
            ) WITHOUT ROWID;
            """)
    }

    /// A chain's sync facts, as `DeviceState` reads them.
    public struct Facts: Sendable, Equatable {
        public var device: String?
        public var deviceRevokedAt: Double?
        public var lastSync: Double?
        public var lastContact: Double?
        public var clockOffset: Double?
        public var lastRefusedAt: Double?
        public var lastRefusalCode: String?
        public var lastRefusalDetail: String?

        public init(device: String? = nil, deviceRevokedAt: Double? = nil, lastSync: Double? = nil, lastContact: Double? = nil, clockOffset: Double? = nil,
                    lastRefusedAt: Double? = nil, lastRefusalCode: String? = nil, lastRefusalDetail: String? = nil) {
            self.device = device
            self.deviceRevokedAt = deviceRevokedAt
            self.lastSync = lastSync
            self.lastContact = lastContact
            self.clockOffset = clockOffset
            self.lastRefusedAt = lastRefusedAt
            self.lastRefusalCode = lastRefusalCode
            self.lastRefusalDetail = lastRefusalDetail
        }
    }
}

extension DeviceRegistry {
    /// Records that the chain's device made contact (asked for the chain's status), with its clock offset.
    public func recordContact(chain: String, now: Double, clockOffset: Double?) throws {
        try database.write { db in
            try db.cachedStatement(sql: """
                INSERT INTO chain_contacts(device_chain_hash, last_contact_at, clock_offset_seconds) VALUES (?, ?, ?)
                ON CONFLICT(device_chain_hash) DO UPDATE SET last_contact_at = excluded.last_contact_at, clock_offset_seconds = excluded.clock_offset_seconds
                """).execute(arguments: [chain, now, clockOffset])
        }
    }

    /// Records a refusal of the chain's device (its code and a detail without values).
    public func recordRefusal(chain: String, code: String, detail: String, now: Double) throws {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO chain_contacts(device_chain_hash, last_contact_at, last_refused_at, last_refusal_code, last_refusal_detail) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(device_chain_hash) DO UPDATE SET last_contact_at = excluded.last_contact_at, last_refused_at = excluded.last_refused_at,
                    last_refusal_code = excluded.last_refusal_code, last_refusal_detail = excluded.last_refusal_detail
                """, arguments: [chain, now, now, code, String(detail.prefix(300))])
        }
    }

    /// Everything known of a chain's syncs.
    public func chainFacts(_ chain: String) throws -> ChainContact.Facts {
        try database.read { db in
            let device = try Row.fetchOne(db, sql: "SELECT d.name, d.revoked_at FROM chain_owners o JOIN devices d ON d.id = o.device_id WHERE o.device_chain_hash = ?", arguments: [chain])
            let sync = try Row.fetchOne(db, sql: "SELECT last_sync_at, clock_offset_seconds FROM chain_syncs WHERE device_chain_hash = ?", arguments: [chain])
            let contact = try Row.fetchOne(db, sql: "SELECT * FROM chain_contacts WHERE device_chain_hash = ?", arguments: [chain])
            return ChainContact.Facts(
                device: device?["name"], deviceRevokedAt: device?["revoked_at"], lastSync: sync?["last_sync_at"],
                lastContact: contact?["last_contact_at"], clockOffset: contact?["clock_offset_seconds"] ?? sync?["clock_offset_seconds"],
                lastRefusedAt: contact?["last_refused_at"], lastRefusalCode: contact?["last_refusal_code"], lastRefusalDetail: contact?["last_refusal_detail"])
        }
    }
}
