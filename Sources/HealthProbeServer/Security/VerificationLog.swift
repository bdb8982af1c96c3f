import Foundation
import GRDB

/// The last verification of each chain, as `hp-server verify` or the admin page ran it.
extension DeviceRegistry {
    public struct Verification: Sendable, Codable, Equatable {
        public var chain: String
        public var checkedAt: Double
        public var mode: String
        public var ok: Bool
        public var bundles: Int
        /// The checks that found a problem: name and detail (never health values).
        public var problems: [String]
    }

    public func recordVerification(_ v: Verification) throws {
        let problems = String(decoding: try JSONEncoder().encode(v.problems), as: UTF8.self)
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO verifications(device_chain_hash, checked_at, mode, ok, bundles, problems) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(device_chain_hash) DO UPDATE SET checked_at = excluded.checked_at, mode = excluded.mode, ok = excluded.ok,
                    bundles = excluded.bundles, problems = excluded.problems
                """, arguments: [v.chain, v.checkedAt, v.mode, v.ok, v.bundles, problems])
        }
    }

    public func verification(chain: String) throws -> Verification? {
        try database.read { db in
            guard let r = try Row.fetchOne(db, sql: "SELECT * FROM verifications WHERE device_chain_hash = ?", arguments: [chain]) else { return nil }
            let problems = (try? JSONDecoder().decode([String].self, from: Data((r["problems"] as String).utf8))) ?? ["unreadable problem list"]
            return Verification(chain: chain, checkedAt: r["checked_at"], mode: r["mode"], ok: r["ok"], bundles: r["bundles"], problems: problems)
        }
    }

    /// Integrity events per kind for a chain (refused bundles and the like), but for a replaced
    /// device's refused attempts on the chain its replacement took over (`replacedAttempts`).
    public func eventCounts(chain: String) throws -> [String: Int] {
        try database.read { db in
            var counts: [String: Int] = [:]
            for r in try Row.fetchAll(db, sql: """
                SELECT kind, count(*) FROM integrity_events e WHERE device_chain_hash = ?
                  AND NOT (kind = 'forbidden' AND EXISTS (SELECT 1 FROM devices d WHERE d.name = e.device_name AND \(Self.replacedByOwner)))
                GROUP BY kind
                """, arguments: [chain]) {
                counts[r[0]] = r[1]
            }
            return counts
        }
    }

    /// A device replaced by the chain's owner (a restore token's take-over) that still tried to
    /// write or read the chain: refused (`forbidden`), nothing of it stored.
    public struct ReplacedAttempts: Sendable, Equatable {
        public var device: String
        public var replacedBy: String?
        public var count: Int
    }

    /// Device `d` was replaced by the owner of event `e`'s chain: the one condition by which
    /// both `eventCounts` leaves its attempts out and `replacedAttempts` counts them.
    static let replacedByOwner = "d.replaced_by_device_id = (SELECT device_id FROM chain_owners WHERE device_chain_hash = e.device_chain_hash)"

    /// The refused attempts on `chain` of devices since replaced and not revoked yet (once
    /// revoked, the administrator has done what there was to do), by device.
    public func replacedAttempts(chain: String) throws -> [ReplacedAttempts] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT e.device_name, r.name AS replaced_by, count(*) AS n
                FROM integrity_events e JOIN devices d ON d.name = e.device_name LEFT JOIN devices r ON r.id = d.replaced_by_device_id
                WHERE e.device_chain_hash = ? AND e.kind = 'forbidden' AND d.revoked_at IS NULL AND \(Self.replacedByOwner)
                GROUP BY e.device_name ORDER BY e.device_name
                """, arguments: [chain]).map { ReplacedAttempts(device: $0["device_name"], replacedBy: $0["replaced_by"], count: $0["n"]) }
        }
    }
}
