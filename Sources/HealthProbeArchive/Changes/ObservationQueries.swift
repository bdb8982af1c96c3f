import Foundation
import GRDB

/// One observation as listed by `hp-node observations`.
public struct ObservationRow: Sendable, Codable, Equatable {
    public var id: Int64
    public var observedAt: Double
    public var status: String
    public var triggerReason: String
    public var timeZoneIdentifier: String?
    public var typeRuns: Int
    public var appeared: Int
    public var disappeared: Int
    public var changed: Int
    public var deletedObjects: Int
}

/// Per-type changes recorded by one observation, from its events.
public struct TypeChangeRow: Sendable, Codable, Equatable {
    public var typeIdentifier: String
    public var runStatus: String?
    public var runKind: String?
    public var appeared: Int
    public var disappeared: Int
    public var changed: Int
    public var deletedObjects: Int
    public var visibleAfter: Int?
    public var rejectedRecords: Int
}

/// Read-only summaries of observations, computed in SQL.
public enum ObservationQueries {
    /// Observations of a chain, newest last, paged by id.
    public static func list(_ db: Database, chainID: Int64? = nil, afterID: Int64 = 0, limit: Int = 500) throws -> [ObservationRow] {
        let rows = try Row.fetchAll(db, sql: """
            SELECT o.id, o.observed_at, o.status, o.trigger_reason, o.time_zone_identifier,
                (SELECT count(*) FROM observation_type_runs t WHERE t.observation_id = o.id) AS runs,
                (SELECT count(*) FROM sample_observation_events e WHERE e.observation_id = o.id AND e.event_kind = \(EventKind.appeared.sql)) AS appeared,
                (SELECT count(*) FROM sample_observation_events e WHERE e.observation_id = o.id AND e.event_kind = \(EventKind.disappeared.sql)) AS disappeared,
                (SELECT count(*) FROM sample_observation_events e WHERE e.observation_id = o.id AND e.event_kind = \(EventKind.representationChanged.sql)) AS changed,
                (SELECT count(*) FROM sample_observation_events e WHERE e.observation_id = o.id AND e.event_kind = \(EventKind.deletedObject.sql)) AS deleted
            FROM observations o
            WHERE o.id > ? AND (? IS NULL OR o.device_chain_id = ?)
            ORDER BY o.id LIMIT ?
            """, arguments: [afterID, chainID, chainID, limit])
        return rows.map {
            ObservationRow(id: $0["id"], observedAt: $0["observed_at"], status: $0["status"], triggerReason: $0["trigger_reason"],
                           timeZoneIdentifier: $0["time_zone_identifier"], typeRuns: $0["runs"], appeared: $0["appeared"],
                           disappeared: $0["disappeared"], changed: $0["changed"], deletedObjects: $0["deleted"])
        }
    }

    /// What one observation changed, per type.
    public static func changes(_ db: Database, observationID: Int64) throws -> [TypeChangeRow] {
        guard try exists(db, id: observationID) else {
            throw ArchiveError(.notFound, "no observation \(observationID); list them with `hp-node observations`")
        }
        let rows = try Row.fetchAll(db, sql: """
            WITH ev AS (
                SELECT s.sample_type_id AS type_id,
                    sum(e.event_kind = \(EventKind.appeared.sql)) AS appeared,
                    sum(e.event_kind = \(EventKind.disappeared.sql)) AS disappeared,
                    sum(e.event_kind = \(EventKind.representationChanged.sql)) AS changed,
                    sum(e.event_kind = \(EventKind.deletedObject.sql)) AS deleted
                FROM sample_observation_events e JOIN samples s ON s.id = e.sample_id
                WHERE e.observation_id = ?
                GROUP BY s.sample_type_id
            ),
            types AS (
                SELECT sample_type_id AS type_id FROM observation_type_runs WHERE observation_id = ?
                UNION SELECT type_id FROM ev
            )
            SELECT st.type_identifier, t.status, t.run_kind, t.verified_visible_count, ifnull(t.rejected_record_count, 0) AS rejected,
                ifnull(ev.appeared, 0) AS appeared, ifnull(ev.disappeared, 0) AS disappeared,
                ifnull(ev.changed, 0) AS changed, ifnull(ev.deleted, 0) AS deleted
            FROM types JOIN sample_types st ON st.id = types.type_id
            LEFT JOIN observation_type_runs t ON t.observation_id = ? AND t.sample_type_id = types.type_id
            LEFT JOIN ev ON ev.type_id = types.type_id
            ORDER BY st.type_identifier
            """, arguments: [observationID, observationID, observationID])
        return rows.map {
            TypeChangeRow(typeIdentifier: $0["type_identifier"], runStatus: $0["status"], runKind: $0["run_kind"],
                          appeared: $0["appeared"], disappeared: $0["disappeared"], changed: $0["changed"],
                          deletedObjects: $0["deleted"], visibleAfter: $0["verified_visible_count"], rejectedRecords: $0["rejected"])
        }
    }

    /// Latest observation id of a chain, if any.
    public static func latestObservationID(_ db: Database, chainID: Int64) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations WHERE device_chain_id = ?", arguments: [chainID])
    }

    /// The chain's observation just before `id`, if any.
    public static func previousObservationID(_ db: Database, chainID: Int64, before id: Int64) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations WHERE device_chain_id = ? AND id < ?", arguments: [chainID, id])
    }

    /// How many observations a chain has.
    public static func count(_ db: Database, chainID: Int64) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM observations WHERE device_chain_id = ?", arguments: [chainID]) ?? 0
    }

    /// Archive status counts.
    public struct Status: Sendable, Codable, Equatable {
        public var schemaVersion: Int
        public var deviceChainHash: String
        public var recoveredFromKeychain: Bool
        public var observations: Int
        public var samples: Int
        public var versions: Int
        public var visibleSamples: Int
        public var events: Int
        public var lastObservationID: Int64?
        public var lastObservationStatus: String?
        public var lastObservedAt: Double?
    }

    public static func status(_ db: Database, chainID: Int64) throws -> Status {
        let chain = try Row.fetchOne(db, sql: "SELECT device_chain_hash, recovered_from_keychain FROM device_chains WHERE id = ?", arguments: [chainID])
        let last = try Row.fetchOne(db, sql: "SELECT id, status, observed_at FROM observations WHERE device_chain_id = ? ORDER BY id DESC LIMIT 1", arguments: [chainID])
        return Status(
            schemaVersion: try ArchiveMigrations.appliedVersion(db),
            deviceChainHash: chain?["device_chain_hash"] ?? "",
            recoveredFromKeychain: (chain?["recovered_from_keychain"] as Int?) == 1,
            observations: try count(db, chainID: chainID),
            samples: try Int.fetchOne(db, sql: "SELECT count(*) FROM samples") ?? 0,
            versions: try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_versions") ?? 0,
            visibleSamples: try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_visibility_ranges WHERE last_observation_id IS NULL") ?? 0,
            events: try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_observation_events") ?? 0,
            lastObservationID: last?["id"], lastObservationStatus: last?["status"], lastObservedAt: last?["observed_at"])
    }
}
