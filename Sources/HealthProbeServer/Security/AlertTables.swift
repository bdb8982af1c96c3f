import Foundation
import GRDB
import HealthProbeProtocol

/// Alerts in the registry: each person's channels, the state of each (chain, condition),
/// how often each chain usually syncs, and the outbox of messages still to deliver.
public enum AlertTables {
    /// Registry migration "v6 alerts".
    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE alert_channels (
                id INTEGER PRIMARY KEY,
                person_id INTEGER NOT NULL REFERENCES people(id) ON DELETE CASCADE,
                kind TEXT NOT NULL CHECK (kind IN ('webhook', 'ntfy', 'email')),
                target TEXT NOT NULL,
                secret TEXT,
                created_at REAL NOT NULL,
                UNIQUE (person_id, kind, target)
            );
            CREATE TABLE alert_states (
                device_chain_hash TEXT NOT NULL,
                condition TEXT NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('ok', 'firing', 'resolved')),
                detail TEXT NOT NULL DEFAULT '',
                fired_at REAL,
                last_reminded_at REAL,
                reminders INTEGER NOT NULL DEFAULT 0,
                acknowledged_by TEXT,
                acknowledged_at REAL,
                snoozed_until REAL,
                resolved_at REAL,
                PRIMARY KEY (device_chain_hash, condition)
            ) WITHOUT ROWID;
            CREATE TABLE alert_cadence (
                device_chain_hash TEXT PRIMARY KEY,
                last_sync_seen REAL,
                mean_interval REAL,
                samples INTEGER NOT NULL DEFAULT 0,
                override_seconds REAL
            ) WITHOUT ROWID;
            CREATE TABLE alert_outbox (
                id INTEGER PRIMARY KEY,
                person_id INTEGER NOT NULL REFERENCES people(id) ON DELETE CASCADE,
                channel_id INTEGER NOT NULL REFERENCES alert_channels(id) ON DELETE CASCADE,
                idempotency_key TEXT NOT NULL UNIQUE,
                subject TEXT NOT NULL,
                text TEXT NOT NULL,
                json TEXT NOT NULL,
                created_at REAL NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at REAL NOT NULL,
                delivered_at REAL,
                last_error TEXT
            );
            CREATE TABLE alert_quiet_hours (
                person_id INTEGER PRIMARY KEY REFERENCES people(id) ON DELETE CASCADE,
                start_minute INTEGER NOT NULL CHECK (start_minute BETWEEN 0 AND 1439),
                end_minute INTEGER NOT NULL CHECK (end_minute BETWEEN 0 AND 1439)
            );
            CREATE INDEX idx_alert_outbox_due ON alert_outbox(next_attempt_at) WHERE delivered_at IS NULL;
            """)
    }

    /// One way to reach a person.
    public struct Channel: Sendable, Codable, Equatable {
        public enum Kind: String, Sendable, Codable, CaseIterable { case webhook, ntfy, email }
        public var id: Int64
        public var person: String
        public var kind: Kind
        /// The URL or address.
        public var target: String
        /// The webhook secret, shown only by its last 4 characters (`…abcd`); nil if none.
        public var secretHint: String?
        public var createdAt: Double
    }

    /// A channel with its secret, for delivery only.
    struct DeliveryChannel: Sendable {
        var id: Int64
        var kind: Channel.Kind
        var target: String
        var secret: String?
    }

    /// Checks a channel's target: an http(s) URL for webhook and ntfy, `local@domain` for email.
    public static func validate(kind: Channel.Kind, target: String) throws {
        switch kind {
        case .webhook, .ntfy:
            guard target.count <= 2048, let url = URL(string: target), let scheme = url.scheme?.lowercased(),
                  scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else {
                throw DeviceRegistry.AuthError(.invalidName, "the \(kind.rawValue) channel needs an http:// or https:// URL with a host, got \(target.prefix(80))")
            }
        case .email:
            let parts = target.split(separator: "@", omittingEmptySubsequences: false)
            guard target.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."),
                  !target.contains(where: { $0.isWhitespace || $0 == "<" || $0 == ">" || $0 == "\r" || $0 == "\n" }) else {
                throw DeviceRegistry.AuthError(.invalidName, "the email channel needs an address like name@example.org, got \(target.prefix(80))")
            }
        }
    }
}

extension DeviceRegistry {
    /// Adds a channel for `person`. A webhook without a secret gets a random one.
    @discardableResult
    public func addAlertChannel(person: String, kind: AlertTables.Channel.Kind, target: String, secret: String? = nil, now: Double,
                                by actor: Audit.Actor = .cli) throws -> AlertTables.Channel {
        try AlertTables.validate(kind: kind, target: target)
        if let secret, !(16...256).contains(secret.utf8.count) || !secret.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
            throw AuthError(.invalidName, "a webhook secret is 16 to 256 printable ASCII characters without spaces; leave it out to have one generated")
        }
        let secret = kind == .webhook ? (secret ?? EnrollmentToken.randomSecret()) : nil
        let id = try database.write { db -> Int64 in
            let person = try Self.personID(db, person)
            guard try Int64.fetchOne(db, sql: "SELECT id FROM alert_channels WHERE person_id = ? AND kind = ? AND target = ?",
                                     arguments: [person, kind.rawValue, target]) == nil else {
                throw AuthError(.duplicate, "that \(kind.rawValue) channel is already set up (see `hp-server alert channel list`)")
            }
            try db.execute(sql: "INSERT INTO alert_channels(person_id, kind, target, secret, created_at) VALUES (?, ?, ?, ?, ?)",
                           arguments: [person, kind.rawValue, target, secret, now])
            let id = db.lastInsertedRowID
            try Audit.record(db, actor, .alertChannelAdd, target: String(id), detail: kind.rawValue)
            return id
        }
        guard let channel = try alertChannels().first(where: { $0.id == id }) else {
            throw AuthError(.notFound, "the channel was removed while it was being added; add it again")
        }
        return channel
    }

    /// Channels, of one person or of everyone; secrets only as a hint.
    public func alertChannels(person: String? = nil) throws -> [AlertTables.Channel] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT c.*, p.name AS person FROM alert_channels c JOIN people p ON p.id = c.person_id
                WHERE ? IS NULL OR p.name = ? ORDER BY p.name, c.id
                """, arguments: [person, person]).map { r in
                let secret: String? = r["secret"]
                return AlertTables.Channel(id: r["id"], person: r["person"], kind: AlertTables.Channel.Kind(rawValue: r["kind"]) ?? .webhook,
                                           target: r["target"], secretHint: secret.map { "…" + $0.suffix(4) }, createdAt: r["created_at"])
            }
        }
    }

    /// Removes a channel of `person` (its undelivered messages go with it).
    public func removeAlertChannel(id: Int64, person: String, by actor: Audit.Actor = .cli) throws {
        try database.write { db in
            let person = try Self.personID(db, person)
            try db.execute(sql: "DELETE FROM alert_channels WHERE id = ? AND person_id = ?", arguments: [id, person])
            guard db.changesCount == 1 else { throw AuthError(.notFound, "no channel \(id) for that person (see `hp-server alert channel list`)") }
            try Audit.record(db, actor, .alertChannelRemove, target: String(id))
        }
    }

    func deliveryChannels(_ db: Database, person: Int64) throws -> [AlertTables.DeliveryChannel] {
        try Row.fetchAll(db, sql: "SELECT id, kind, target, secret FROM alert_channels WHERE person_id = ? ORDER BY id", arguments: [person]).compactMap { r in
            guard let kind = AlertTables.Channel.Kind(rawValue: r["kind"]) else { return nil }
            return AlertTables.DeliveryChannel(id: r["id"], kind: kind, target: r["target"], secret: r["secret"])
        }
    }
}
