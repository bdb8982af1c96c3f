import Foundation
import GRDB
import HealthProbeCanonical

/// What can be wrong with a chain.
public enum AlertCondition: String, Sendable, Codable, CaseIterable {
    /// No good sync for longer than the chain's usual cadence plus a grace period.
    case silent
    /// A bundle refused (divergence, out of order, invalid) or a revoked device still trying.
    case refused
    /// The chain's last verification found a problem.
    case verificationFailed = "verification_failed"
    /// A newly applied observation has a type whose verdict is loss.
    case lossFound = "loss_found"
    /// Server-level, for admins: the data directory's file system is nearly full.
    case diskSpaceLow = "disk_space_low"
    /// Server-level, for admins: the server's TLS certificate expires soon.
    case certificateExpiring = "certificate_expiring"
    /// Server-level, for admins: an alert message has not been delivered for over a day.
    case deliveryFailing = "delivery_failing"
    /// Server-level, for admins: scheduled backups stopped, or bundles wait too long for object storage.
    case backupFailing = "backup_failing"

    /// Where server-level alerts are kept in place of a chain hash (only admins read it).
    public static let serverKey = "server"

    /// Whether the condition is about the server rather than a chain.
    public var isServerLevel: Bool { [.diskSpaceLow, .certificateExpiring, .deliveryFailing, .backupFailing].contains(self) }

    /// The condition in words, for people.
    public var words: String {
        switch self {
        case .silent: "silent"
        case .refused: "bundle refused"
        case .verificationFailed: "verification failed"
        case .lossFound: "loss found"
        case .diskSpaceLow: "disk space low"
        case .certificateExpiring: "TLS certificate expiring"
        case .deliveryFailing: "alert delivery failing"
        case .backupFailing: "backups failing"
        }
    }
}

/// A condition found firing on a chain in this round; `detail` never holds health values.
public struct AlertFinding: Sendable, Equatable {
    public var chain: String
    public var condition: AlertCondition
    public var detail: String
    /// The evidence page relative to the dashboard; nil for the chain's page.
    public var page: String?
    public init(chain: String, condition: AlertCondition, detail: String, page: String? = nil) {
        self.chain = chain
        self.condition = condition
        self.detail = detail
        self.page = page
    }
}

/// A change people are told about.
public struct AlertEvent: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable { case fired, reminder, resolved }
    public var chain: String
    public var device: String?
    public var condition: AlertCondition
    public var event: Kind
    /// Unix seconds.
    public var at: Double
    public var detail: String
    /// The evidence page relative to the dashboard; nil for the chain's page.
    public var page: String? = nil

    /// The page to link to: `page`, else the chain's (the admin page for the server).
    public var path: String { page ?? (chain == AlertCondition.serverKey ? "/admin" : "/chains/\(chain)") }
}

/// One alert's state as the page, the API and `hp-server alert list` show it.
public struct AlertState: Sendable, Codable, Equatable {
    public var chain: String
    public var condition: AlertCondition
    public var state: String
    public var detail: String
    public var firedAt: Double?
    public var lastRemindedAt: Double?
    public var acknowledgedBy: String?
    public var acknowledgedAt: Double?
    public var snoozedUntil: Double?
    public var resolvedAt: Double?
}

/// How often to remind while an alert stays firing: `first` after firing, doubling up to `longest`.
public struct AlertReminders: Sendable, Equatable {
    public var first: Double
    public var longest: Double
    public init(first: Double = 3600, longest: Double = 86400) {
        self.first = first
        self.longest = longest
    }
    /// The wait before reminder number `n` (0 is the first).
    public func wait(after n: Int) -> Double { min(longest, first * pow(2, Double(min(n, 30)))) }
}

extension DeviceRegistry {
    /// The result of one evaluation round.
    public struct AlertRound: Sendable, Equatable {
        public var events: [AlertEvent]
        /// Outbox rows queued (one per person's channel).
        public var queued: Int
    }

    /// Moves each (chain, condition) among `chains` x `evaluated` through ok -> firing -> resolved
    /// from this round's `findings`, and queues one message per person (grouping their
    /// events on chains they may read, `readable`) on each of their channels, all in one transaction.
    /// Acknowledged or snoozed alerts get no reminders. `link` makes a page path a full URL.
    public func applyAlertRound(findings: [AlertFinding], chains: [String], evaluated: Set<AlertCondition>, now: Double,
                                reminders: AlertReminders = AlertReminders(), link: @Sendable (String) -> String? = { _ in nil }) throws -> AlertRound {
        try database.write { db in
            var events: [AlertEvent] = []
            let firing = Dictionary(findings.map { ("\($0.chain)|\($0.condition.rawValue)", $0) }, uniquingKeysWith: { a, _ in a })
            let devices = Dictionary(try Row.fetchAll(db, sql: "SELECT o.device_chain_hash, d.name FROM chain_owners o JOIN devices d ON d.id = o.device_id")
                .map { ($0[0] as String, $0[1] as String) }, uniquingKeysWith: { a, _ in a })
            for chain in chains {
                for condition in AlertCondition.allCases where evaluated.contains(condition) {
                    let row = try Row.fetchOne(db, sql: "SELECT * FROM alert_states WHERE device_chain_hash = ? AND condition = ?", arguments: [chain, condition.rawValue])
                    let wasFiring = row.map { ($0["state"] as String) == "firing" } ?? false
                    func event(_ kind: AlertEvent.Kind, _ detail: String, page: String? = nil) {
                        events.append(AlertEvent(chain: chain, device: devices[chain], condition: condition, event: kind, at: now, detail: detail, page: page))
                    }
                    if let finding = firing["\(chain)|\(condition.rawValue)"] {
                        if !wasFiring {
                            try db.execute(sql: """
                                INSERT INTO alert_states(device_chain_hash, condition, state, detail, fired_at, reminders) VALUES (?, ?, 'firing', ?, ?, 0)
                                ON CONFLICT(device_chain_hash, condition) DO UPDATE SET state = 'firing', detail = excluded.detail, fired_at = excluded.fired_at,
                                    last_reminded_at = NULL, reminders = 0, acknowledged_by = NULL, acknowledged_at = NULL, resolved_at = NULL
                                """, arguments: [chain, condition.rawValue, finding.detail, now])
                            event(.fired, finding.detail, page: finding.page)
                        } else if let row {
                            let n: Int = row["reminders"]
                            let since = (row["last_reminded_at"] as Double?) ?? (row["fired_at"] as Double?) ?? now
                            let quiet = (row["acknowledged_at"] as Double?) != nil || ((row["snoozed_until"] as Double?) ?? 0) > now
                            try db.execute(sql: "UPDATE alert_states SET detail = ? WHERE device_chain_hash = ? AND condition = ?",
                                           arguments: [finding.detail, chain, condition.rawValue])
                            if !quiet, now >= since + reminders.wait(after: n) {
                                try db.execute(sql: "UPDATE alert_states SET last_reminded_at = ?, reminders = reminders + 1 WHERE device_chain_hash = ? AND condition = ?",
                                               arguments: [now, chain, condition.rawValue])
                                event(.reminder, finding.detail, page: finding.page)
                            }
                        }
                    } else if wasFiring {
                        try db.execute(sql: "UPDATE alert_states SET state = 'resolved', resolved_at = ?, snoozed_until = NULL WHERE device_chain_hash = ? AND condition = ?",
                                       arguments: [now, chain, condition.rawValue])
                        event(.resolved, "")
                    }
                }
            }
            var queued = 0
            guard !events.isEmpty else { return AlertRound(events: [], queued: 0) }
            for personRow in try Row.fetchAll(db, sql: "SELECT * FROM people ORDER BY id") {
                let person = try Self.person(db, personRow)
                let readable: Set<String>? = try (person.role == .admin ? nil : Self.readable(db, person))
                let mine = events.filter { readable?.contains($0.chain) ?? true }
                guard !mine.isEmpty else { continue }
                let message = AlertMessage(person: person.name, events: mine, now: now, link: link)
                for channel in try deliveryChannels(db, person: person.id) {
                    let key = "hp-alert-" + UUID().uuidString.lowercased()
                    try db.execute(sql: """
                        INSERT INTO alert_outbox(person_id, channel_id, idempotency_key, subject, text, json, created_at, next_attempt_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """, arguments: [person.id, channel.id, key, message.subject, message.text, try message.json(key: key), now, now])
                    queued += 1
                }
            }
            return AlertRound(events: events, queued: queued)
        }
    }

    /// Alert states (firing and resolved) on the chains `person` may read; every chain for nil.
    public func alertStates(for person: People.Person?) throws -> [AlertState] {
        try database.read { db in
            var readable: Set<String>? = nil
            if let person, person.role != .admin { readable = try Self.readable(db, person) }
            return try Row.fetchAll(db, sql: "SELECT * FROM alert_states WHERE state != 'ok' ORDER BY fired_at DESC").compactMap { r in
                let chain: String = r["device_chain_hash"]
                guard readable?.contains(chain) ?? true, let condition = AlertCondition(rawValue: r["condition"]) else { return nil }
                return AlertState(chain: chain, condition: condition, state: r["state"], detail: r["detail"], firedAt: r["fired_at"],
                                  lastRemindedAt: r["last_reminded_at"], acknowledgedBy: r["acknowledged_by"], acknowledgedAt: r["acknowledged_at"],
                                  snoozedUntil: r["snoozed_until"], resolvedAt: r["resolved_at"])
            }
        }
    }

    /// Acknowledges a firing alert (no more reminders until it resolves), as `person` who may read the chain.
    /// With `firedAt` (what the page showed), only that firing: one that fired again since (a new
    /// loss found meanwhile) is not acknowledged unseen.
    public func acknowledgeAlert(chain: String, condition: AlertCondition, person: People.Person, now: Double, firedAt: Double? = nil,
                                 by actor: Audit.Actor = .cli) throws {
        do {
            try changeFiringAlert(chain: chain, condition: condition, person: person, action: .alertAck, detail: condition.rawValue,
                                  sql: "UPDATE alert_states SET acknowledged_by = ?, acknowledged_at = ? WHERE device_chain_hash = ? AND condition = ? AND state = 'firing' AND (? IS NULL OR fired_at = ?)",
                                  arguments: [person.name, now, chain, condition.rawValue, firedAt, firedAt], by: actor)
        } catch let e as AuthError where e.code == .notFound && firedAt != nil {
            let firing = try database.read { db in
                try Double.fetchOne(db, sql: "SELECT fired_at FROM alert_states WHERE device_chain_hash = ? AND condition = ? AND state = 'firing'", arguments: [chain, condition.rawValue])
            }
            guard firing != nil else { throw e }
            throw AuthError(.conflict, "this \(condition.rawValue) alert fired again since the page was shown (new evidence); look at it again before acknowledging it")
        }
    }

    /// Snoozes a firing alert until `until` (Unix seconds).
    public func snoozeAlert(chain: String, condition: AlertCondition, person: People.Person, until: Double, by actor: Audit.Actor = .cli) throws {
        try changeFiringAlert(chain: chain, condition: condition, person: person, action: .alertSnooze, detail: "\(condition.rawValue) until \(CanonicalDate.string(until))",
                              sql: "UPDATE alert_states SET snoozed_until = ? WHERE device_chain_hash = ? AND condition = ? AND state = 'firing'",
                              arguments: [until, chain, condition.rawValue], by: actor)
    }

    private func changeFiringAlert(chain: String, condition: AlertCondition, person: People.Person, action: Audit.Action, detail: String,
                                   sql: String, arguments: StatementArguments, by actor: Audit.Actor = .cli) throws {
        guard try canRead(person, chain: chain) else {
            throw AuthError(.forbidden, "\(person.name) may not read chain \(chain.prefix(12)), so cannot change its alerts")
        }
        try database.write { db in
            try db.execute(sql: sql, arguments: arguments)
            guard db.changesCount == 1 else {
                throw AuthError(.notFound, "no firing \(condition.rawValue) alert on chain \(chain.prefix(12)) (see `hp-server alert list`)")
            }
            try Audit.record(db, actor, action, target: chain, detail: detail)
        }
    }
}
