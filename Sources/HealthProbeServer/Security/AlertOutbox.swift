import Foundation
import GRDB

/// The alert outbox: messages wait here until their channel takes them, so a restart
/// neither loses nor repeats one (each carries its idempotency key).
extension DeviceRegistry {
    /// A message due for delivery, with its channel.
    public struct OutboxMessage: Sendable, Equatable {
        public var id: Int64
        public var key: String
        public var person: String
        public var channelID: Int64
        public var kind: AlertTables.Channel.Kind
        public var target: String
        var secret: String?
        public var subject: String
        public var text: String
        public var json: String
        public var attempts: Int
    }

    /// One outbox row as `hp-server alert outbox` and the tests see it.
    public struct OutboxEntry: Sendable, Codable, Equatable {
        public var key: String
        public var person: String
        public var kind: String
        public var attempts: Int
        public var nextAttemptAt: Double
        public var deliveredAt: Double?
        public var lastError: String?
    }

    /// Undelivered messages due at `now`, oldest first, at most `limit`.
    public func dueAlertMessages(now: Double, limit: Int = 50) throws -> [OutboxMessage] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT o.*, c.kind, c.target, c.secret, p.name AS person FROM alert_outbox o
                JOIN alert_channels c ON c.id = o.channel_id JOIN people p ON p.id = o.person_id
                WHERE o.delivered_at IS NULL AND o.next_attempt_at <= ? ORDER BY o.next_attempt_at, o.id LIMIT ?
                """, arguments: [now, limit]).compactMap { r in
                guard let kind = AlertTables.Channel.Kind(rawValue: r["kind"]) else { return nil }
                return OutboxMessage(id: r["id"], key: r["idempotency_key"], person: r["person"], channelID: r["channel_id"], kind: kind,
                                     target: r["target"], secret: r["secret"], subject: r["subject"], text: r["text"], json: r["json"], attempts: r["attempts"])
            }
        }
    }

    /// Marks a message delivered.
    public func markAlertDelivered(id: Int64, now: Double) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE alert_outbox SET delivered_at = ?, attempts = attempts + 1, last_error = NULL WHERE id = ?", arguments: [now, id])
        }
    }

    /// Records a failed attempt; the next waits `backoff(attempts)` seconds.
    public func markAlertFailed(id: Int64, error: String, now: Double, backoff: @Sendable (Int) -> Double) throws {
        try database.write { db in
            let attempts = (try Int.fetchOne(db, sql: "SELECT attempts FROM alert_outbox WHERE id = ?", arguments: [id]) ?? 0) + 1
            try db.execute(sql: "UPDATE alert_outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE id = ?",
                           arguments: [attempts, now + backoff(attempts), String(error.prefix(300)), id])
        }
    }

    /// When the oldest message still undelivered after a failed attempt was queued; nil if none.
    public func oldestFailingAlertMessage() throws -> Double? {
        try database.read { db in
            try Double.fetchOne(db, sql: "SELECT min(created_at) FROM alert_outbox WHERE delivered_at IS NULL AND attempts > 0")
        }
    }

    /// The outbox, newest first.
    public func alertOutbox(limit: Int = 100) throws -> [OutboxEntry] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT o.*, c.kind, p.name AS person FROM alert_outbox o JOIN alert_channels c ON c.id = o.channel_id
                JOIN people p ON p.id = o.person_id ORDER BY o.id DESC LIMIT ?
                """, arguments: [limit]).map { r in
                OutboxEntry(key: r["idempotency_key"], person: r["person"], kind: r["kind"], attempts: r["attempts"],
                            nextAttemptAt: r["next_attempt_at"], deliveredAt: r["delivered_at"], lastError: r["last_error"])
            }
        }
    }

    /// Every chain with an owner, for evaluation.
    public func ownedChains() throws -> [String] {
        try database.read { db in try String.fetchAll(db, sql: "SELECT device_chain_hash FROM chain_owners ORDER BY device_chain_hash") }
    }

    /// Learns a chain's usual interval between good syncs (a moving mean over the syncs the
    /// evaluator saw) and returns it with the chain's override, if any.
    public func learnCadence(chain: String, lastSync: Double?) throws -> (mean: Double?, override: Double?) {
        try database.write { db in
            let row = try Row.fetchOne(db, sql: "SELECT * FROM alert_cadence WHERE device_chain_hash = ?", arguments: [chain])
            var mean: Double? = row?["mean_interval"]
            let seen: Double? = row?["last_sync_seen"]
            var samples = row.map { $0["samples"] as Int } ?? 0
            if let lastSync, let seen, lastSync > seen {
                let interval = lastSync - seen
                samples += 1
                mean = mean.map { $0 + (interval - $0) / Double(min(samples, 20)) } ?? interval
            }
            try db.execute(sql: """
                INSERT INTO alert_cadence(device_chain_hash, last_sync_seen, mean_interval, samples) VALUES (?, ?, ?, ?)
                ON CONFLICT(device_chain_hash) DO UPDATE SET last_sync_seen = excluded.last_sync_seen, mean_interval = excluded.mean_interval, samples = excluded.samples
                """, arguments: [chain, lastSync ?? seen, mean, samples])
            let override: Double? = row?["override_seconds"]
            return (mean, override)
        }
    }

    /// Sets (or with nil clears) how long a chain may go without a sync before it is silent, grace excluded.
    public func setSilentAfter(chain: String, seconds: Double?) throws {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO alert_cadence(device_chain_hash, override_seconds) VALUES (?, ?)
                ON CONFLICT(device_chain_hash) DO UPDATE SET override_seconds = excluded.override_seconds
                """, arguments: [chain, seconds])
        }
    }
}

extension DeviceRegistry {
    /// A test message for one of `person`'s channels (not queued: `hp-server alert channel test` sends it at once).
    public func alertTestMessage(channelID: Int64, person: String, now: Double) throws -> OutboxMessage {
        try database.read { db in
            let personID = try Self.personID(db, person)
            guard let channel = try deliveryChannels(db, person: personID).first(where: { $0.id == channelID }) else {
                throw AuthError(.notFound, "no channel \(channelID) for \(person) (see `hp-server alert channel list`)")
            }
            let key = "hp-alert-test-" + UUID().uuidString.lowercased()
            let message = AlertMessage(person: person, events: [], now: now, link: { _ in nil })
            let text = "Hello \(person),\n\nthis is a test of your HealthProbe alert channel."
            return OutboxMessage(id: 0, key: key, person: person, channelID: channelID, kind: channel.kind, target: channel.target, secret: channel.secret,
                                 subject: "HealthProbe: test", text: text, json: try message.json(key: key), attempts: 0)
        }
    }
}
