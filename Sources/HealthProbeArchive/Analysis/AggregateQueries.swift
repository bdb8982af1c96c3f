import Foundation
import GRDB

/// A type's summary at an observation.
public struct TypeSummary: Sendable, Codable, Equatable {
    public var observationID: Int64
    public var typeIdentifier: String
    public var visibleRecordCount: Int
    public var appearedCount: Int
    public var disappearedCount: Int
    public var representationChangedCount: Int
    public var earliestStartDate: Double?
    public var latestEndDate: Double?
    public var valueSum: Double?
    public var valueMax: Double?
    public var aggregateHash: String?
    /// The observation whose daily rows this summary uses.
    public var dailyBaseObservationID: Int64?
}

/// One daily aggregate row (a local day of one source revision).
public struct DailyAggregate: Sendable, Codable, Equatable {
    public var typeIdentifier: String
    public var bucketStart: Double
    public var bucketEnd: Double
    public var visibleRecordCount: Int
    public var valueSum: Double?
    public var valueMax: Double?
    public var sourceRevision: String?
    public var aggregateHash: String?
}

/// Reads materialized aggregates as of an observation.
public enum AggregateQueries {
    /// The summary of every type in effect at `obs` (each type's latest at or before it).
    public static func summaries(_ db: Database, at obs: Int64, typeIdentifier: String? = nil) throws -> [TypeSummary] {
        try Row.fetchAll(db, sql: """
            SELECT ts.*, st.type_identifier FROM sample_types st
            JOIN observation_type_summaries ts ON ts.sample_type_id = st.id AND ts.observation_id = (
                SELECT max(x.observation_id) FROM observation_type_summaries x JOIN observations o ON o.id = x.observation_id
                WHERE x.sample_type_id = st.id AND x.observation_id <= ?1
                  AND o.device_chain_id = (SELECT device_chain_id FROM observations WHERE id = ?1))
            WHERE ?2 IS NULL OR st.type_identifier = ?2
            ORDER BY st.type_identifier
            """, arguments: [obs, typeIdentifier]).map(summary)
    }

    static func summary(_ r: Row) -> TypeSummary {
        TypeSummary(observationID: r["observation_id"], typeIdentifier: r["type_identifier"], visibleRecordCount: r["visible_record_count"],
                    appearedCount: r["appeared_count"], disappearedCount: r["disappeared_count"],
                    representationChangedCount: r["representation_changed_count"], earliestStartDate: r["earliest_start_date"],
                    latestEndDate: r["latest_end_date"], valueSum: r["value_sum"], valueMax: r["value_max"],
                    aggregateHash: r["aggregate_hash"], dailyBaseObservationID: r["daily_base_observation_id"])
    }

    /// Daily rows of a type in effect at `obs`, optionally from `from` (bucket start) on, by day then revision.
    public static func daily(_ db: Database, at obs: Int64, typeIdentifier: String, from: Double? = nil, to: Double? = nil) throws -> [DailyAggregate] {
        guard let s = try summaries(db, at: obs, typeIdentifier: typeIdentifier).first, let base = s.dailyBaseObservationID else { return [] }
        return try Row.fetchAll(db, sql: """
            SELECT a.*, ifnull(so.bundle_identifier, '') || ' ' || ifnull(sr.product_type, '') || ' ' || ifnull(sr.version, '') AS rev
            FROM daily_type_aggregates a JOIN sample_types st ON st.id = a.sample_type_id
            LEFT JOIN source_revisions sr ON sr.id = a.source_revision_id LEFT JOIN sources so ON so.id = sr.source_id
            WHERE a.observation_id = ? AND st.type_identifier = ? AND (? IS NULL OR a.bucket_start >= ?) AND (? IS NULL OR a.bucket_start < ?)
            ORDER BY a.bucket_start, a.source_revision_id
            """, arguments: [base, typeIdentifier, from, from, to, to]).map { r in
            DailyAggregate(typeIdentifier: typeIdentifier, bucketStart: r["bucket_start"], bucketEnd: r["bucket_end"],
                           visibleRecordCount: r["visible_record_count"], valueSum: r["value_sum"], valueMax: r["value_max"],
                           sourceRevision: (r["source_revision_id"] as Int64?) == nil ? nil : r["rev"], aggregateHash: r["aggregate_hash"])
        }
    }
}
