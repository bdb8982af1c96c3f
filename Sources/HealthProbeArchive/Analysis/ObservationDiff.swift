import Foundation
import GRDB

/// How a sample differs between two observations.
public enum DiffKind: String, Sendable, Codable, CaseIterable {
    case appeared, disappeared, changed
}

/// Per-type counts of a diff.
public struct DiffTypeCount: Sendable, Codable, Equatable {
    public var typeIdentifier: String
    public var appeared: Int
    public var disappeared: Int
    public var changed: Int
}

/// A payload version as shown in diffs.
public struct VersionView: Sendable, Codable, Equatable {
    public var versionID: Int64
    public var payloadHash: String
    public var startDate: Double
    public var endDate: Double
    public var numericValue: Double?
    public var unit: String?
    public var categoryValue: Int64?
}

/// One changed sample of a diff, with its before and after versions.
public struct DiffEntry: Sendable, Codable, Equatable {
    public var sampleID: Int64
    public var typeIdentifier: String
    public var kind: DiffKind
    public var before: VersionView?
    public var after: VersionView?
}

/// A diff between observations `from` and `to` of one chain (database-design.md 9),
/// held in a temporary table of the connection that prepared it.
///
/// Only ranges that open or close between the two observations are read (the
/// range indexes on first and last observation), so the cost grows with the
/// number of changes, not with the number of visible samples.
public struct ObservationDiff: Sendable {
    public let from: Int64
    public let to: Int64

    /// Builds `temp.hp_diff` for `from` → `to` (either order).
    public static func prepare(_ db: Database, from: Int64, to: Int64) throws -> ObservationDiff {
        let chains = try Row.fetchAll(db, sql: "SELECT id, device_chain_id FROM observations WHERE id IN (?, ?)", arguments: [from, to])
        for id in [from, to] where !chains.contains(where: { ($0["id"] as Int64) == id }) {
            throw ArchiveError(.notFound, "no observation \(id); list them with `hp-node observations`")
        }
        if Set(chains.map { $0["device_chain_id"] as Int64 }).count > 1 {
            throw ArchiveError(.invalidInput, "observations \(from) and \(to) belong to different device chains; a diff compares one chain's observations")
        }
        let lo = min(from, to), hi = max(from, to)
        try db.ensureTempTable("hp_diff", columns: "sample_id INTEGER PRIMARY KEY, type_id INTEGER, lo_version INTEGER, hi_version INTEGER, kind TEXT")
        try db.execute(sql: "DELETE FROM temp.hp_diff")
        // Visible at lo, not at hi: ranges that close in (lo, hi].
        try db.execute(sql: """
            INSERT INTO temp.hp_diff(sample_id, lo_version)
            SELECT r.sample_id, r.version_id FROM sample_visibility_ranges r
            WHERE r.last_observation_id > ?1 AND r.last_observation_id <= ?2 AND r.first_observation_id <= ?1
            """, arguments: [lo, hi])
        // Visible at hi, not at lo: ranges that open in (lo, hi] and are still open at hi.
        try db.execute(sql: """
            INSERT INTO temp.hp_diff(sample_id, hi_version)
            SELECT r.sample_id, r.version_id FROM sample_visibility_ranges r
            WHERE r.first_observation_id > ?1 AND r.first_observation_id <= ?2 AND (r.last_observation_id IS NULL OR r.last_observation_id > ?2)
            ON CONFLICT(sample_id) DO UPDATE SET hi_version = excluded.hi_version
            """, arguments: [lo, hi])
        // A sample that went away and came back with the same version did not change.
        try db.execute(sql: "DELETE FROM temp.hp_diff WHERE lo_version IS hi_version")
        let (loKind, hiKind) = from <= to ? ("disappeared", "appeared") : ("appeared", "disappeared")
        try db.execute(sql: """
            UPDATE temp.hp_diff SET
                type_id = (SELECT s.sample_type_id FROM samples s WHERE s.id = hp_diff.sample_id),
                kind = CASE WHEN hi_version IS NULL THEN ? WHEN lo_version IS NULL THEN ? ELSE 'changed' END
            """, arguments: [loKind, hiKind])
        return ObservationDiff(from: from, to: to)
    }

    /// Counts per type, for every type with a change.
    public func counts(_ db: Database) throws -> [DiffTypeCount] {
        try Row.fetchAll(db, sql: """
            SELECT st.type_identifier, sum(d.kind = 'appeared') AS a, sum(d.kind = 'disappeared') AS dis, sum(d.kind = 'changed') AS c
            FROM temp.hp_diff d JOIN sample_types st ON st.id = d.type_id
            GROUP BY d.type_id ORDER BY st.type_identifier
            """).map { DiffTypeCount(typeIdentifier: $0[0], appeared: $0["a"], disappeared: $0["dis"], changed: $0["c"]) }
    }

    /// A page of changed samples ordered by sample id, after `afterSampleID`.
    public func page(_ db: Database, kind: DiffKind? = nil, typeIdentifier: String? = nil, afterSampleID: Int64 = 0, limit: Int = 100) throws -> [DiffEntry] {
        let fromIsLo = from <= to
        let rows = try Row.fetchAll(db, sql: """
            SELECT d.sample_id, st.type_identifier, d.kind,
                   a.id AS a_id, lower(hex(a.payload_hash)) AS a_hash, a.start_date AS a_start, a.end_date AS a_end, a.numeric_value AS a_value, a.unit AS a_unit, a.category_value AS a_cat,
                   b.id AS b_id, lower(hex(b.payload_hash)) AS b_hash, b.start_date AS b_start, b.end_date AS b_end, b.numeric_value AS b_value, b.unit AS b_unit, b.category_value AS b_cat
            FROM temp.hp_diff d
            JOIN sample_types st ON st.id = d.type_id
            LEFT JOIN sample_versions a ON a.id = d.lo_version
            LEFT JOIN sample_versions b ON b.id = d.hi_version
            WHERE d.sample_id > ? AND (? IS NULL OR d.kind = ?) AND (? IS NULL OR st.type_identifier = ?)
            ORDER BY d.sample_id LIMIT ?
            """, arguments: [afterSampleID, kind?.rawValue, kind?.rawValue, typeIdentifier, typeIdentifier, limit])
        return rows.map { r in
            func view(_ p: String) -> VersionView? {
                guard let id: Int64 = r[p + "_id"] else { return nil }
                return VersionView(versionID: id, payloadHash: r[p + "_hash"], startDate: r[p + "_start"], endDate: r[p + "_end"],
                                   numericValue: r[p + "_value"], unit: r[p + "_unit"], categoryValue: r[p + "_cat"])
            }
            let lo = view("a"), hi = view("b")
            return DiffEntry(sampleID: r["sample_id"], typeIdentifier: r["type_identifier"], kind: DiffKind(rawValue: r["kind"]) ?? .changed,
                             before: fromIsLo ? lo : hi, after: fromIsLo ? hi : lo)
        }
    }
}
