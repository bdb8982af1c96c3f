import Foundation
import GRDB

/// Loss found in each chain's observations, as the alert service saw it: how far it has
/// examined the replica, and the latest observation with loss (types and counts, never values).
public enum AlertLoss {
    /// Registry migration "v7 alert loss".
    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE alert_loss (
                device_chain_hash TEXT PRIMARY KEY,
                examined_through INTEGER NOT NULL,
                loss_observation INTEGER,
                loss_detail TEXT,
                loss_page TEXT,
                loss_found_at REAL
            ) WITHOUT ROWID;
            """)
    }

    /// The latest loss found on a chain, and when its `loss_found` alert was acknowledged.
    public struct Facts: Sendable, Equatable {
        public var observation: Int64
        public var detail: String
        /// The evidence page, relative to the dashboard.
        public var page: String
        public var foundAt: Double
        public var acknowledgedAt: Double?
    }
}

extension DeviceRegistry {
    /// The last observation the alert service examined on `chain`, nil before the first look.
    public func lossExaminedThrough(chain: String) throws -> Int64? {
        try database.read { db in
            try Int64.fetchOne(db, sql: "SELECT examined_through FROM alert_loss WHERE device_chain_hash = ?", arguments: [chain])
        }
    }

    /// Records a look at `chain` through observation `through`. A new loss replaces the last
    /// one and sets the chain's `loss_found` alert back to ok, so the next round fires it
    /// afresh (new detail and link, reminders and acknowledgement reset).
    public func recordLossScan(chain: String, through: Int64, loss: (observation: Int64, detail: String, page: String)?, now: Double) throws {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO alert_loss(device_chain_hash, examined_through) VALUES (?, ?)
                ON CONFLICT(device_chain_hash) DO UPDATE SET examined_through = excluded.examined_through
                """, arguments: [chain, through])
            guard let loss else { return }
            try db.execute(sql: "UPDATE alert_loss SET loss_observation = ?, loss_detail = ?, loss_page = ?, loss_found_at = ? WHERE device_chain_hash = ?",
                           arguments: [loss.observation, String(loss.detail.prefix(500)), loss.page, now, chain])
            try db.execute(sql: """
                UPDATE alert_states SET state = 'ok', acknowledged_by = NULL, acknowledged_at = NULL, snoozed_until = NULL
                WHERE device_chain_hash = ? AND condition = ? AND state = 'firing'
                """, arguments: [chain, AlertCondition.lossFound.rawValue])
        }
    }

    /// The latest loss found on `chain`, with the acknowledgement of its alert; nil if none.
    public func lossFacts(chain: String) throws -> AlertLoss.Facts? {
        try database.read { db in
            guard let r = try Row.fetchOne(db, sql: """
                SELECT l.loss_observation, l.loss_detail, l.loss_page, l.loss_found_at, s.acknowledged_at FROM alert_loss l
                LEFT JOIN alert_states s ON s.device_chain_hash = l.device_chain_hash AND s.condition = ?
                WHERE l.device_chain_hash = ? AND l.loss_observation IS NOT NULL
                """, arguments: [AlertCondition.lossFound.rawValue, chain]) else { return nil }
            return AlertLoss.Facts(observation: r["loss_observation"], detail: r["loss_detail"] ?? "", page: r["loss_page"] ?? "/chains/\(chain)",
                                   foundAt: r["loss_found_at"] ?? 0, acknowledgedAt: r["acknowledged_at"])
        }
    }
}
