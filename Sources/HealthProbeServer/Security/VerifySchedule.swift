import Foundation
import GRDB
import HealthProbeArchive

/// When the alert service last verified each chain on its schedule (quick daily, full weekly);
/// a verification's result is kept by `VerificationLog` like any other.
public enum VerifySchedule {
    /// Registry migration "v8 verify schedule".
    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE verify_schedule (
                device_chain_hash TEXT PRIMARY KEY,
                last_quick_at REAL,
                last_full_at REAL
            ) WITHOUT ROWID;
            """)
    }
}

extension DeviceRegistry {
    /// The verification due on `chain` at `now`, if any: full when the last full one is
    /// `fullEvery` old, else quick when the last quick (or full) one is `quickEvery` old.
    /// A chain seen for the first time is due a quick one now and its first full one after `fullEvery`.
    public func dueVerification(chain: String, now: Double, quickEvery: Double, fullEvery: Double) throws -> ArchiveVerifier.Mode? {
        try database.write { db in
            guard let r = try Row.fetchOne(db, sql: "SELECT * FROM verify_schedule WHERE device_chain_hash = ?", arguments: [chain]) else {
                try db.execute(sql: "INSERT INTO verify_schedule(device_chain_hash, last_full_at) VALUES (?, ?)", arguments: [chain, now])
                return .quick
            }
            if now - ((r["last_full_at"] as Double?) ?? -.infinity) >= fullEvery { return .full }
            if now - ((r["last_quick_at"] as Double?) ?? -.infinity) >= quickEvery { return .quick }
            return nil
        }
    }

    /// Records that the schedule ran `mode` on `chain` at `now` (a full one counts as quick too).
    public func recordScheduledVerification(chain: String, mode: ArchiveVerifier.Mode, now: Double) throws {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO verify_schedule(device_chain_hash, last_quick_at, last_full_at) VALUES (?, ?, ?)
                ON CONFLICT(device_chain_hash) DO UPDATE SET last_quick_at = excluded.last_quick_at,
                    last_full_at = coalesce(excluded.last_full_at, verify_schedule.last_full_at)
                """, arguments: [chain, now, mode == .full ? now : nil])
        }
    }
}
