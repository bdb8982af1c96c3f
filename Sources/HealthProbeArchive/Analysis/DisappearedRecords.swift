import Foundation
import GRDB

/// A record that disappeared at an observation, as its last visible version showed it:
/// the evidence behind a "lost" count, readable by a person.
public struct DisappearedRecord: Sendable, Codable, Equatable {
    public var sampleID: Int64
    public var typeIdentifier: String
    public var startDate: Double
    public var endDate: Double
    public var numericValue: Double?
    public var unit: String?
    public var categoryValue: Int64?
    /// The writing app's bundle identifier and the device model, when the version recorded them.
    public var sourceBundle: String?
    public var sourceProduct: String?
    /// Why it counts as gone: `full_scan_absent` (a complete read no longer returned it),
    /// `hk_deleted_object` (HealthKit reported its deletion) or `reported`.
    public var evidence: String
}

/// The records that disappeared at one observation, paged by sample id.
public enum DisappearedRecords {
    /// Up to `limit` records of `observation` (of `type` when given) after sample `after`.
    /// Uses the events' unique index on (observation, kind, sample).
    public static func page(_ db: Database, observation: Int64, type: String? = nil, after: Int64 = 0, limit: Int = 100) throws -> [DisappearedRecord] {
        try Row.fetchAll(db, sql: """
            SELECT e.sample_id, st.type_identifier, v.start_date, v.end_date, v.numeric_value, v.unit, v.category_value,
                   so.bundle_identifier, sr.product_type,
                   \(EvidenceKind.nameSQL("e.evidence_kind")) AS evidence
            FROM sample_observation_events e
            JOIN samples s ON s.id = e.sample_id
            JOIN sample_types st ON st.id = s.sample_type_id
            JOIN sample_versions v ON v.id = coalesce(e.version_id,
                (SELECT r.version_id FROM sample_visibility_ranges r WHERE r.sample_id = e.sample_id AND r.last_observation_id = e.observation_id LIMIT 1))
            LEFT JOIN source_revisions sr ON sr.id = v.source_revision_id
            LEFT JOIN sources so ON so.id = sr.source_id
            WHERE e.observation_id = ? AND e.event_kind = \(EventKind.disappeared.code) AND e.sample_id > ?
              AND (? IS NULL OR st.type_identifier = ?)
            ORDER BY e.sample_id LIMIT ?
            """, arguments: [observation, after, type, type, limit]).map { r in
            DisappearedRecord(sampleID: r["sample_id"], typeIdentifier: r["type_identifier"], startDate: r["start_date"], endDate: r["end_date"],
                              numericValue: r["numeric_value"], unit: r["unit"], categoryValue: r["category_value"],
                              sourceBundle: r["bundle_identifier"], sourceProduct: r["product_type"], evidence: r["evidence"] ?? "reported")
        }
    }
}
